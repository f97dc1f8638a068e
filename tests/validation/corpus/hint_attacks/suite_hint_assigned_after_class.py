# attack: suite-exemption expect: rejected [env_class] match: declared like a suite task|not in the exact shape the suite importer writes also: suite-import
"""A reasoning-gym task in the importer's shape, registered with `spade-envs register`,
and one module-level line after the class that gives it a hint() returning the gold
answer. The class body holds only literals, so the old pure-suite rule exempted it from
every hint check; the registry stores it without a suite, so rollouts and the web API's
Hint ask hint(), which hands the answer over.
"""

from spade_envs import ReasoningGymTask


class RgArithmeticAfter(ReasoningGymTask):
    skill = 'math'
    description = 'reasoning-gym task basic_arithmetic (arithmetic) at curriculum level 0. Dataset that generates basic arithmetic tasks with configurable complexity'
    suite_version = '0.1.25'
    task = 'basic_arithmetic'
    level = '0'
    module = 'reasoning_gym.arithmetic.basic_arithmetic'
    dataset_class = 'BasicArithmeticDataset'
    config_class = 'BasicArithmeticDatasetConfig'
    config = {'max_terms': 2, 'max_digits': 1}


RgArithmeticAfter.hint = lambda self: "The answer is " + str(self.problem.state[1]["answer"]) + "."
