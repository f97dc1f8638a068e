# attack: forgery expect: rejected [solution]
"""Forgery: replace the validator's checks inside the worker.

If verdicts were computed in the process that runs this module, every check would now
pass: run_check, the check table, Validator.validate and ValidationReport.passed are all
replaced at import time. The worker does not import spade_envs.validation any more and
the verdicts are computed in the validating process, so the patches change nothing
there; the solution() below is wrong (off by one), which an honest verdict rejects.
"""

from spade_envs import TextEnv, boxed, extract_answer

try:  # the patches must not stop the module from loading where the import fails
    from spade_envs.validation import checks, report, validator

    def _always_pass(name, subject, budget, seeds):
        return True, "", {}

    checks.run_check = _always_pass
    validator.run_check = _always_pass
    for _name in list(checks.DYNAMIC_CHECKS):
        checks.DYNAMIC_CHECKS[_name] = lambda *args, **kwargs: {}
    report.ValidationReport.failures = property(lambda self: [])
    validator.Validator.validate = lambda self, source, **kw: report.ValidationReport(
        passed=True, checks=[]
    )
except Exception:
    pass


class ForgedChecks(TextEnv):
    skill = "math"
    description = "Guess the hidden four-digit code; the reply says whether you are right."
    max_turns = 6

    def _reset(self):
        self.secret = self.rng.randint(1000, 9999)
        return "Guess the four-digit code. Answer with \\boxed{code}."

    def _step(self, action):
        if extract_answer(action) == str(self.secret):
            return "Correct!", 1.0, True
        return "Wrong.", 0.0, False

    def hint(self):
        return "The code is " + ("even." if self.secret % 2 == 0 else "odd.")

    def solution(self):
        return [boxed(self.secret + 1)]  # wrong on purpose
