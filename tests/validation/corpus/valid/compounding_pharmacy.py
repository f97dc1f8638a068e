# expect: valid
"""Compound a prescription from two stock solutions of unknown strength, then seal it.

Tools take Literal, float, int, bool and list[str] arguments. There is no final
<answer>: sealing the vial (``seal_vial``) ends the episode through ``end_episode`` with
reward 1.0 when volume and strength are within 1% and the label carries the patient ID.
"""

from __future__ import annotations

import json
from typing import Literal

from spade_envs import ToolEnv, ToolError

Stock = Literal["alpha", "beta", "saline"]
DRUGS = ["amoxicillin", "ibuprofen", "paracetamol", "cefalexin", "prednisolone"]
PATIENTS = ["Okafor", "Lindqvist", "Tanaka", "Moreau", "Haddad", "Novak", "Silva", "Kowalski"]


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class CompoundingPharmacy(ToolEnv):
    skill = "science"
    description = (
        "Prepare a liquid prescription of a given volume and concentration. Two stock "
        "bottles (alpha, beta) hold the drug at unknown strengths and saline dilutes it. "
        "Measure the stocks with assay, pour exact volumes into the vial, check it with "
        "inspect, and finish by sealing the vial with a label that includes the patient ID; "
        "only a vial within 1% of the prescribed volume and strength counts."
    )
    max_turns = 15
    vial_capacity = 250.0

    def _reset(self) -> str:
        self.drug = self.rng.choice(DRUGS)
        self.patient = f"{self.rng.choice(PATIENTS)}-{self.rng.randint(1000, 9999)}"
        self.strength = {"alpha": float(self.rng.choice([40, 50, 80, 100])), "saline": 0.0}
        self.strength["beta"] = self.strength["alpha"] / self.rng.choice([2, 4, 5])
        self.volume = float(self.rng.choice([50, 60, 80, 100, 120, 150]))
        share = self.rng.choice([0.2, 0.25, 0.4, 0.5, 0.6, 0.75])  # of the volume from alpha
        self.target = share * self.strength["alpha"] + (1 - share) * self.strength["beta"]
        self.alpha_ml = share * self.volume
        self.vial: dict[str, float] = {"alpha": 0.0, "beta": 0.0, "saline": 0.0}
        self.log: list[str] = []
        self.discards = 0
        return (
            f"Prescription for patient {self.patient}: {self.volume:g} mL of {self.drug} at "
            f"{self.target:g} mg/mL. Stocks: alpha and beta (strength unknown: assay them) and "
            "saline (no drug). Tools: assay(stock, replicates), pour(stock, volume_ml), "
            "inspect(detailed), discard(), seal_vial(label_tags). The label must include the "
            "patient ID. Sealing ends the task."
        )

    def _contents(self) -> tuple[float, float]:
        total = sum(self.vial.values())
        drug = sum(self.strength[s] * v for s, v in self.vial.items())
        return total, (drug / total if total else 0.0)

    def tool_assay(self, stock: Stock, replicates: int = 1) -> dict:
        """Measure the drug concentration of a stock bottle.

        Args:
            stock: Which bottle to measure: alpha, beta or saline.
            replicates: How many repeat measurements to report (1 to 3).
        """
        if not 1 <= replicates <= 3:
            raise ToolError("replicates must be 1, 2 or 3")
        return {"stock": stock, "mg_per_ml": [self.strength[stock]] * replicates}

    def tool_pour(self, stock: Stock, volume_ml: float) -> str:
        """Pour a volume of one stock into the vial.

        Args:
            stock: Which bottle to pour from: alpha, beta or saline.
            volume_ml: Millilitres to pour, more than 0.
        """
        if not 0 < volume_ml <= self.vial_capacity:
            raise ToolError(f"volume_ml must be above 0 and at most {self.vial_capacity:g}")
        total, _ = self._contents()
        if total + volume_ml > self.vial_capacity + 1e-9:
            raise ToolError(f"the vial holds {self.vial_capacity:g} mL and has {total:g} mL")
        self.vial[stock] += volume_ml
        self.log.append(f"{volume_ml:g} mL {stock}")
        return f"Poured {volume_ml:g} mL of {stock}. The vial now holds {total + volume_ml:g} mL."

    def tool_inspect(self, detailed: bool = False) -> dict:
        """Read the vial's volume and concentration.

        Args:
            detailed: Also list every pour so far.
        """
        total, conc = self._contents()
        report: dict = {"volume_ml": round(total, 3), "mg_per_ml": round(conc, 3)}
        if detailed:
            report["pours"] = list(self.log)
        return report

    def tool_discard(self) -> str:
        """Empty the vial and start again (at most twice)."""
        if self.discards >= 2:
            raise ToolError("no clean vials left; you must work with this one")
        self.discards += 1
        self.vial = {s: 0.0 for s in self.vial}
        self.log = []
        return "The vial is empty again."

    def tool_seal_vial(self, label_tags: list[str]) -> str:
        """Seal and label the vial; this ends the task.

        Args:
            label_tags: Text items printed on the label, e.g. ["ID-1234", "drug name"].
        """
        total, conc = self._contents()
        tags = [t.strip().lower() for t in label_tags[:20]]
        volume_ok = abs(total - self.volume) <= 0.01 * self.volume
        strength_ok = abs(conc - self.target) <= 0.01 * self.target
        labelled = self.patient.lower() in tags
        if volume_ok and strength_ok and labelled:
            self.end_episode(1.0, "Pharmacist check: correct. Dispensed.")
        else:
            problems = [
                name
                for name, ok in (
                    ("volume", volume_ok),
                    ("strength", strength_ok),
                    ("label", labelled),
                )
                if not ok
            ]
            self.end_episode(0.0, f"Pharmacist check failed: {', '.join(problems)}.")
        return f"Sealed a vial of {total:g} mL at {conc:.3g} mg/mL."

    def hint(self) -> str:
        ratio = self.strength["alpha"] / self.strength["beta"]
        return (
            f"Alpha is {ratio:g} times as strong as beta. With no saline, the alpha share s "
            "solves s*alpha + (1-s)*beta = target; pour s times the volume of alpha."
        )

    def solution(self) -> list[str]:
        return [
            call("assay", stock="alpha"),
            call("assay", stock="beta", replicates=2),
            call("pour", stock="alpha", volume_ml=round(self.alpha_ml, 3)),
            call("pour", stock="beta", volume_ml=round(self.volume - self.alpha_ml, 3)),
            call("inspect", detailed=True),
            call("seal_vial", label_tags=[self.patient, self.drug]),
        ]
