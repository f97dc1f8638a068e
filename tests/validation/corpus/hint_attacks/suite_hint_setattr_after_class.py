# attack: suite-exemption expect: rejected [env_class] match: declared like a suite task|not in the exact shape the suite importer writes also: suite-import
"""As suite_hint_assigned_after_class, with setattr() after the class instead of an
assignment (a statement the old rule never looked at).
"""

from spade_envs import ReasoningGymTask


class RgArithmeticSetattr(ReasoningGymTask):
    skill = 'math'
    description = 'reasoning-gym task basic_arithmetic (arithmetic) at curriculum level 0. Dataset that generates basic arithmetic tasks with configurable complexity'
    suite_version = '0.1.25'
    task = 'basic_arithmetic'
    level = '0'
    module = 'reasoning_gym.arithmetic.basic_arithmetic'
    dataset_class = 'BasicArithmeticDataset'
    config_class = 'BasicArithmeticDatasetConfig'
    config = {'max_terms': 2, 'max_digits': 1}


def _gold(self):
    return "Try " + str(self.problem.state[1]["answer"]) + "."


setattr(RgArithmeticSetattr, "hint", _gold)
