# attack: wire expect: contained
"""Wire lie from a game: after reset its agents are lists, not names.

The game proxy mirrors the worker's snapshot and builds a set of the agents, which
raises TypeError (unhashable type) in the parent unless it checks each agent is text.
"""

from spade_envs import IllegalMove, TextGame


class UnhashableAgents(TextGame):
    skill = "logic"
    description = "A wire attack: a game whose agents are not names."
    num_players = 2
    max_turns = 4

    def reset(self, seed=None, options=None):
        super().reset(seed=seed, options=options)
        self.agents = [[agent] for agent in self.agents]

    def _reset(self):
        self.count = 0

    def _observe(self, agent):
        return f"Count: {self.count}. Say 'add'."

    def _move(self, agent, action):
        if "add" not in action:
            raise IllegalMove("say add")
        self.count += 1
        return None

    def legal_moves(self, agent):
        return ["add"]

    def best_move(self, agent):
        return "add"

    def hint(self, agent):
        return "Say add."
