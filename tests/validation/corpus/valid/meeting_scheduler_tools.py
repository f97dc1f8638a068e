# expect: valid
"""Book the earliest meeting slot that fits three colleagues' calendars, through tools.

Tool-protocol details exercised here: the first observation embeds ``tools_text()``; one
tool has a keyword-only argument and an ``Optional`` one; ``book`` ends the episode with
``end_episode`` and graded credit (1.0 for the earliest slot, 0.4 for a later valid
one, 0 for a clash).
"""

from __future__ import annotations

from typing import Literal, Optional

from spade_envs import ToolEnv, ToolError

Day = Literal["Mon", "Tue", "Wed", "Thu", "Fri"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]
PEOPLE = ["Amara", "Bjorn", "Carmen", "Dev", "Eun-ji", "Farah", "Goran"]
OPEN, CLOSE = 9 * 60, 17 * 60


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def minutes_of(text: str) -> Optional[int]:
    parts = text.strip().split(":")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 2 for p in parts):
        return None
    hours, mins = int(parts[0]), int(parts[1])
    return hours * 60 + mins if hours < 24 and mins < 60 else None


class MeetingSchedulerTools(ToolEnv):
    skill = "planning"
    description = (
        "Schedule a meeting for three colleagues: find the earliest slot in the working week "
        "(Mon-Fri, 09:00-17:00, starts on the half hour) when all three are free for the "
        "whole meeting, using the calendar tools, then book it. Booking ends the task; only "
        "the earliest common slot earns full credit."
    )
    max_turns = 20

    def _reset(self) -> str:
        self.people = self.rng.sample(PEOPLE, 3)
        self.length = self.rng.choice([60, 90])
        while True:
            self.busy = {p: {d: self._random_day() for d in DAYS} for p in self.people}
            slots = self._common_slots()
            # Not on Monday: the agent has to look past the first day.
            if slots and slots[0][0] != "Mon":
                break
        self.best = slots[0]
        return (
            f"Book a {self.length}-minute meeting for {', '.join(self.people)} at the earliest "
            "time in the week when all of them are free. Tools:\n" + self.tools_text() +
            "\nCall a tool with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>."
        )

    def _random_day(self) -> list[tuple[int, int]]:
        blocks = []
        start = OPEN
        while start < CLOSE:
            start += self.rng.choice([0, 30, 60, 90])
            if start >= CLOSE:
                break
            end = min(CLOSE, start + self.rng.choice([30, 60, 90, 120, 180]))
            blocks.append((start, end))
            start = end
        return blocks

    def _free(self, person: str, day: str, start: int) -> bool:
        end = start + self.length
        return end <= CLOSE and all(end <= a or start >= b for a, b in self.busy[person][day])

    def _common_slots(self) -> list[tuple[str, int]]:
        return [
            (day, start)
            for day in DAYS
            for start in range(OPEN, CLOSE, 30)
            if all(self._free(p, day, start) for p in self.people)
        ]

    def _person(self, name: str) -> str:
        match = [p for p in self.people if p.lower() == name.strip().lower()]
        if not match:
            raise ToolError(f"unknown colleague {name[:30]!r}; the attendees are {', '.join(self.people)}")
        return match[0]

    def tool_calendar(self, person: str, day: Day) -> list[str]:
        """Show one colleague's busy blocks on one day.

        Args:
            person: The colleague's name.
            day: Mon, Tue, Wed, Thu or Fri.
        """
        who = self._person(person)
        return [f"busy {clock(a)}-{clock(b)}" for a, b in self.busy[who][day]] or ["free all day"]

    def tool_free_slots(self, person: str, day: Day, *, after: Optional[str] = None) -> list[str]:
        """List the half-hour start times at which one colleague is free for the whole meeting.

        Args:
            person: The colleague's name.
            day: Mon, Tue, Wed, Thu or Fri.
            after: Only list starts at or after this time (HH:MM); omit for the whole day.
        """
        who = self._person(person)
        earliest = OPEN if after is None else minutes_of(after)
        if earliest is None:
            raise ToolError("after must be a time like 13:30")
        return [clock(s) for s in range(OPEN, CLOSE, 30) if s >= earliest and self._free(who, day, s)]

    def tool_book(self, day: Day, start: str, attendees: list[str]) -> str:
        """Book the meeting; this ends the task.

        Args:
            day: Mon, Tue, Wed, Thu or Fri.
            start: Start time as HH:MM, on the hour or half hour.
            attendees: Names of everyone invited (all three colleagues).
        """
        begin = minutes_of(start)
        if begin is None or begin % 30 or not OPEN <= begin < CLOSE:
            raise ToolError("start must be a half-hour time between 09:00 and 16:30, like 10:30")
        invited = {a.strip().lower() for a in attendees[:10]}
        if invited != {p.lower() for p in self.people}:
            raise ToolError(f"invite exactly the three colleagues: {', '.join(self.people)}")
        clash = [p for p in self.people if not self._free(p, day, begin)]
        if clash:
            self.end_episode(0.0, f"Clash: {', '.join(clash)} cannot make it. Meeting cancelled.")
        elif (day, begin) == self.best:
            self.end_episode(1.0, "Booked the earliest possible slot.")
        else:
            self.end_episode(0.4, "Booked, but an earlier slot was free for everyone.")
        return f"Meeting request for {day} {clock(begin)}-{clock(begin + self.length)} sent."

    def hint(self) -> str:
        day = self.best[0]
        return (
            f"Nobody's calendars line up before {day}. On that day, intersect the three "
            "colleagues' free start times and take the first one."
        )

    def solution(self) -> list[str]:
        day, begin = self.best
        calls = [
            f'<tool_call>{{"name": "free_slots", "arguments": {{"person": "{p}", "day": "{day}"}}}}</tool_call>'
            for p in self.people
        ]
        people = ", ".join(f'"{p}"' for p in self.people)
        calls.append(
            f'<tool_call>{{"name": "book", "arguments": {{"day": "{day}", "start": "{clock(begin)}", '
            f'"attendees": [{people}]}}}}</tool_call>'
        )
        return calls
