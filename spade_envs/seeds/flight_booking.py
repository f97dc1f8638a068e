"""Book the cheapest itinerary between two cities that arrives before a deadline.

Flights are (id, origin, destination, departure, arrival, price) with times in minutes
of one day; a connection needs 45 minutes on the ground. The optimum is computed by
dynamic programming over flights in departure order, per number of legs (at most 4).
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError

# hole: city names (at least 3 distinct)
_CITIES = ["Lisbon", "Oslo", "Cairo", "Lima", "Perth", "Quito", "Kyiv", "Riga", "Accra", "Hanoi"]
_AIRLINES = ["SK", "LX", "TP", "KL", "AY", "EI"]
_CONNECT, _MAX_LEGS = 45, 4


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


class FlightBooking(ToolEnv):
    skill = "planning"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "Book the cheapest itinerary from one city to another that lands by a deadline. "
        "Search departures per city with search_flights(origin), build a connected "
        "itinerary with book(flight_id) and cancel(flight_id) (45 minutes to connect, "
        "at most 4 flights), check it with itinerary(), then finish with "
        "<answer>done</answer>; only a valid, on-time and cheapest itinerary wins."
    )
    # hole: turns allowed (searches and bookings need up to 9) [9, 30]
    max_turns = 16
    # hole: cities used (3-10) and random flights besides the one sure route (2-60) [2, 60]
    knobs: ClassVar[dict[str, int]] = {"cities": 6, "flights": 20}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = ("3 <= cities <= 10", "cities <= len(_CITIES)", "len(_CITIES) >= 3")

    def _reset(self) -> str:
        cities = self.rng.sample(_CITIES, max(3, min(self.cities, len(_CITIES))))
        self.origin, self.dest, via = cities[:3]
        first = self.rng.randrange(6 * 60, 10 * 60, 15)  # one route always exists
        specs = [(self.origin, via, first), (via, self.dest, first + 6 * 60)]
        specs += [
            (*self.rng.sample(cities, 2), self.rng.randrange(6 * 60, 19 * 60, 15))
            for _ in range(max(2, min(self.flights, 60)))
        ]
        codes = self.rng.sample(range(100, 1000), len(specs))
        self.schedule: dict[str, tuple[str, str, int, int, int]] = {}
        for (src, dst, dep), code in sorted(zip(specs, codes), key=lambda item: item[0][2]):
            fid = f"{self.rng.choice(_AIRLINES)}{code}"
            arrive = dep + self.rng.randrange(60, 300, 15)
            self.schedule[fid] = (src, dst, dep, arrive, self.rng.randrange(60, 400, 5))
        # best[fid] = (cost, route) of the cheapest itinerary from origin ending with fid.
        best, layer = {}, {f: (v[4], [f]) for f, v in self.schedule.items() if v[0] == self.origin}
        for _ in range(_MAX_LEGS):
            for fid, (cost, route) in layer.items():
                if fid not in best or cost < best[fid][0]:
                    best[fid] = (cost, route)
            layer = self._extend(layer)
        arrivals = sorted(
            (self.schedule[f][3], cost, route)
            for f, (cost, route) in best.items()
            if self.schedule[f][1] == self.dest
        )
        cheapest = min(arrivals, key=lambda a: a[1])
        earlier = [a for a in arrivals if a[0] < cheapest[0] and a[1] > cheapest[1]]
        self.deadline = self.rng.choice(earlier)[0] if earlier else cheapest[0] + 15
        on_time = [a for a in arrivals if a[0] <= self.deadline]
        self.cost, self.route = min((a[1], a[2]) for a in on_time)
        self.booked: list[str] = []
        return (
            f"Book the cheapest trip from {self.origin} to {self.dest} that lands by "
            f"{_clock(self.deadline)}. Tools: search_flights(origin), book(flight_id), "
            "cancel(flight_id), itinerary(). Each next flight must leave from where the last "
            f"one landed, at least {_CONNECT} minutes later; at most {_MAX_LEGS} flights. "
            "When your itinerary is complete, reply <answer>done</answer>."
        )

    def _extend(self, layer: dict) -> dict:
        """Itineraries one flight longer than those in ``layer`` (cheapest per last flight)."""
        longer: dict = {}
        for fid, (cost, route) in layer.items():
            _, here, _, landed, _ = self.schedule[fid]
            for nid, (src, _, dep, _, price) in self.schedule.items():
                connects = src == here and dep >= landed + _CONNECT
                if connects and (nid not in longer or cost + price < longer[nid][0]):
                    longer[nid] = (cost + price, route + [nid])
        return longer

    def _show(self, fid: str) -> str:
        src, dst, dep, arr, price = self.schedule[fid]
        return f"{fid} {src} -> {dst} dep {_clock(dep)} arr {_clock(arr)} price {price}"

    def tool_search_flights(self, origin: str) -> str:
        """List every flight leaving a city, in departure order.

        Args:
            origin: City name, e.g. Lisbon.
        """
        found = [self._show(f) for f, v in self.schedule.items() if v[0].lower() == origin.lower()]
        return "\n".join(found) or f"no flights leave {origin[:40]!r}"

    def tool_book(self, flight_id: str) -> str:
        """Add a flight to the end of the itinerary.

        Args:
            flight_id: Flight id from search_flights, e.g. KL417.
        """
        fid = flight_id.strip().upper()
        if fid not in self.schedule:
            raise ToolError(f"no flight {flight_id[:20]!r}; use search_flights to see ids")
        if fid in self.booked or len(self.booked) >= _MAX_LEGS:
            raise ToolError(f"{fid} is already booked or the itinerary is full")
        src, _, dep, _, _ = self.schedule[fid]
        where, ready = (
            (self.origin, 0)
            if not self.booked
            else (self.schedule[self.booked[-1]][1], self.schedule[self.booked[-1]][3] + _CONNECT)
        )
        if src != where or dep < ready:
            raise ToolError(
                f"{fid} does not connect: the next flight must leave {where} "
                f"at {_clock(ready)} or later"
            )
        self.booked.append(fid)
        return f"Booked {self._show(fid)}."

    def tool_cancel(self, flight_id: str) -> str:
        """Remove the last flight of the itinerary.

        Args:
            flight_id: Id of the last booked flight (cancel later flights first).
        """
        if not self.booked:
            raise ToolError("nothing is booked yet")
        if flight_id.strip().upper() != self.booked[-1]:
            raise ToolError(f"only the last booked flight ({self.booked[-1]}) can be cancelled")
        return f"Cancelled {self.booked.pop()}."

    def tool_itinerary(self) -> str:
        """Show the booked flights and the total price."""
        lines = [self._show(f) for f in self.booked] or ["nothing booked yet"]
        total = sum(self.schedule[f][4] for f in self.booked)
        return "\n".join(lines + [f"total price {total}"])

    def _answer(self, answer: str):
        last = self.schedule[self.booked[-1]] if self.booked else None
        total = sum(self.schedule[f][4] for f in self.booked)
        if last is None or last[1] != self.dest:
            return f"The itinerary does not reach {self.dest}.", 0.0, True
        if last[3] > self.deadline:
            return f"The itinerary lands at {_clock(last[3])}, after the deadline.", 0.0, True
        if total > self.cost:
            return f"Valid, but a cheaper on-time itinerary exists (yours: {total}).", 0.0, True
        return f"Booked the cheapest on-time itinerary for {total}.", 1.0, True

    # hole: rule: the privileged hint (never the flight ids)
    def hint(self) -> str:
        stops = [self.schedule[f][1] for f in self.route[:-1]]
        via = f"changes planes in {', then '.join(stops)}" if stops else "is a single flight"
        return f"The best itinerary has {len(self.route)} flight(s) and {via}."

    def solution(self) -> list[str]:
        actions = []
        for fid in self.route:
            actions.append(_call("search_flights", origin=self.schedule[fid][0]))
            actions.append(_call("book", flight_id=fid))
        return actions + ["<answer>done</answer>"]
