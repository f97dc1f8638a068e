# expect: valid
"""Answer a genealogy question by browsing a family archive through tools.

A tool environment whose final answer is given as \\boxed{Name} (the ToolEnv base class
reads \\boxed{} as well as <answer>). One tool has optional ``int | None`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spade_envs import ToolEnv, ToolError, answers_match, boxed

NAMES = [
    "Ada",
    "Bruno",
    "Clara",
    "Dmitri",
    "Elif",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Luca",
    "Mira",
    "Nils",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wim",
    "Xenia",
    "Yusuf",
    "Zora",
    "Anton",
    "Bea",
    "Cyril",
    "Dora",
    "Emil",
    "Fleur",
    "Gus",
    "Hana",
    "Igor",
    "Julia",
    "Kurt",
    "Lena",
    "Marco",
    "Nora",
    "Otto",
    "Petra",
    "Rafael",
    "Selma",
    "Tomas",
    "Ulla",
    "Viktor",
    "Wanda",
    "Yara",
    "Zeno",
]


@dataclass
class Person:
    name: str
    born: int
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


class FamilyArchiveBoxed(ToolEnv):
    skill = "logic"
    description = (
        "A family archive covers three generations. Look people up with lookup(name) "
        "(birth year, parents, children) or list them by birth year with "
        "born_between(start, end), then answer a question about cousins, aunts and uncles "
        "with the person's name in \\boxed{Name}. One answer only."
    )
    max_turns = 25

    def _reset(self) -> str:
        names = iter(self.rng.sample(NAMES, len(NAMES)))
        self.people: dict[str, Person] = {}

        def couple_children(a: str, b: str, count: int, years: list[int]) -> list[str]:
            kids = []
            for _ in range(count):
                kid = Person(next(names), years.pop(), parents=[a, b])
                self.people[kid.name] = kid
                self.people[a].children.append(kid.name)
                self.people[b].children.append(kid.name)
                kids.append(kid.name)
            return kids

        elders = self.rng.sample(range(1918, 1940), 8)
        for year in elders:
            elder = Person(next(names), year)
            self.people[elder.name] = elder
        founders = list(self.people)
        middle_years = self.rng.sample(range(1942, 1968), 12)
        families = [
            couple_children(
                founders[2 * i], founders[2 * i + 1], self.rng.randint(2, 3), middle_years
            )
            for i in range(4)
        ]
        young_years = self.rng.sample(range(1970, 2000), 24)
        for i in range(4):  # marry one child of each family into the next family
            a, b = families[i][0], families[(i + 1) % 4][-1]
            couple_children(a, b, self.rng.randint(1, 3), young_years)
        youngest = [p for p in self.people.values() if p.born >= 1970]
        self.subject, self.question, self.answer = "", "", ""
        for person in self.rng.sample(youngest, len(youngest)):
            cousins, elders_ = self._cousins(person.name), self._aunts_uncles(person.name)
            if self.rng.random() < 0.5 and len(cousins) >= 2:
                self.subject = person.name
                self.question = f"Which of {person.name}'s first cousins was born first?"
                self.answer = min(cousins, key=lambda n: self.people[n].born)
                break
            if len(elders_) >= 2:
                self.subject = person.name
                self.question = f"Who is the youngest aunt or uncle (by blood) of {person.name}?"
                self.answer = max(elders_, key=lambda n: self.people[n].born)
                break
        return (
            f"Family archive question: {self.question}\n"
            "Tools: lookup(name), born_between(start, end). Give your final answer as "
            "\\boxed{Name}; you get one answer."
        )

    def _siblings(self, name: str) -> list[str]:
        person = self.people[name]
        found: list[str] = []
        for parent in person.parents:
            for child in self.people[parent].children:
                if child != name and child not in found:
                    found.append(child)
        return found

    def _aunts_uncles(self, name: str) -> list[str]:
        found: list[str] = []
        for parent in self.people[name].parents:
            found += [s for s in self._siblings(parent) if s not in found]
        return found

    def _cousins(self, name: str) -> list[str]:
        found: list[str] = []
        for relative in self._aunts_uncles(name):
            found += [c for c in self.people[relative].children if c not in found]
        return found

    def tool_lookup(self, name: str) -> dict:
        """Look up one person in the archive.

        Args:
            name: First name of the person, e.g. Ada.
        """
        key = name.strip().title()
        if key not in self.people:
            raise ToolError(f"no one named {name[:30]!r} in the archive; names are first names")
        p = self.people[key]
        return {"name": p.name, "born": p.born, "parents": p.parents, "children": p.children}

    def tool_born_between(self, start: int | None = None, end: int | None = None) -> list[str]:
        """List people born in a range of years, oldest first.

        Args:
            start: First year of the range (inclusive); omit for no lower bound.
            end: Last year of the range (inclusive); omit for no upper bound.
        """
        low = -(10**9) if start is None else start
        high = 10**9 if end is None else end
        rows = sorted((p.born, p.name) for p in self.people.values() if low <= p.born <= high)
        return [f"{name} ({year})" for year, name in rows]

    def _answer(self, answer: str):
        if answers_match(answer, self.answer):
            return f"Correct: {self.answer}.", 1.0, True
        return "That is not right.", 0.0, True

    def hint(self) -> str:
        parents = " and ".join(self.people[self.subject].parents)
        if "cousin" in self.question:
            return (
                f"{self.subject}'s parents are {parents}. First cousins are the children of "
                "their brothers and sisters; compare the cousins' birth years."
            )
        return (
            f"{self.subject}'s parents are {parents}. Aunts and uncles by blood are their "
            "brothers and sisters (the other children of the grandparents)."
        )

    def solution(self) -> list[str]:
        lookups = [self.subject, *self.people[self.subject].parents]
        calls = [
            f'<tool_call>{{"name": "lookup", "arguments": {{"name": "{n}"}}}}</tool_call>'
            for n in lookups
        ]
        return calls + [boxed(self.answer)]
