"""SPADE self-play generated game"""


class LookupCapitalEnv(ToolUseBaseEnv):
    """Look up a country's capital with the atlas tool."""

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        atlas = {"Aldoria": "Vey", "Brisk": "Tolm", "Cendra": "Ost", "Dunmore": "Hale"}
        self._country = rng.choice(sorted(atlas))
        self._atlas = atlas
        self._expected_answer = atlas[self._country]
        self._tools = {"atlas": {"description": "Capital of a country.",
                                 "parameters": {"type": "object",
                                                "properties": {"country": {"type": "string"}}}}}
        return f"What is the capital of {self._country}? Use the atlas tool.", {}

    def tool_atlas(self, country):
        return self._atlas.get(country, "unknown")

    def solution(self):
        return "Ask the atlas for the country, then answer with the capital it gives."
