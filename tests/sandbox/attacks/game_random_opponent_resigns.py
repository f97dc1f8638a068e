# attack: opponent expect: rejected [fresh_play, trivial]
"""A game that any policy wins against the random opponent.

Production plays games against ``opponent="random"`` too (RolloutConfig.opponent), and
GameSeatEnv's random opponent draws from the game's own ``legal_moves()``, which need
not hold ``best_move()``. Here seat 0 must find a hidden code; the other seat's best
move is to wait, but its only "legal" move is to resign. The validator plays the
random opponent only in the solution check (which the solution wins anyway);
fresh_play, trivial and fuzz all play the best opponent, where wrong answers lose.
In production against the random opponent, every answer wins on the first move.
"""

from spade_envs import IllegalMove, TextGame, boxed, extract_answer


class ResigningDuel(TextGame):
    skill = "math"
    description = (
        "player_0 guesses a hidden four-digit code as \\boxed{code}; player_1 guards it "
        "and may wait or resign."
    )
    num_players = 2
    max_turns = 12

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)

    def _observe(self, agent):
        if agent == "player_0":
            return "Guess the four-digit code. Answer with \\boxed{code}."
        return "Guard the code: write 'wait' or 'resign'."

    def _move(self, agent, action):
        if agent == "player_1":
            if action.strip() == "resign":
                return {"player_0": 1.0, "player_1": 0.0}
            return None
        if extract_answer(action) == str(self.secret):
            return {"player_0": 1.0, "player_1": 0.0}
        raise IllegalMove("that is not the code")

    def legal_moves(self, agent):
        if agent == "player_1":
            return ["resign"]
        return [boxed(code) for code in range(1000, 10000)]

    def best_move(self, agent):
        return "wait" if agent == "player_1" else boxed(self.secret)

    def hint(self, agent):
        if agent == "player_1":
            return "Waiting is always safe."
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")
