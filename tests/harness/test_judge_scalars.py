"""Python numbers among forward's arguments (kbh/judge_problem.py): split
from the tensors, the same in every draw, and put back for the reference
model, whose forward then takes what a kernel gets."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_problem as jp  # noqa: E402


def test_split_and_put_back():
    x, y = torch.zeros(2), torch.ones(3)
    tensors, scalars = jp.split_inputs("get_inputs", [x, 0.5, y, True, None, 7])
    assert tensors[0] is x and tensors[1] is y
    assert scalars == [(1, 0.5), (3, True), (4, None), (5, 7)]
    back = jp.with_scalars(tensors, scalars)
    assert back[0] is x and back[2] is y and back[1::2][0] == 0.5 and back[3:] == [True, None, 7]


def test_other_values_are_refused_by_position():
    with pytest.raises(jp.ProblemError, match=r"get_inputs\(\)\[1\] is a str"):
        jp.split_inputs("get_inputs", [torch.zeros(1), "relu"])
    with pytest.raises(jp.ProblemError, match="must return a list"):
        jp.split_inputs("get_inputs", torch.zeros(1))


def _problem(tmp_path, body):
    p = tmp_path / "p.py"
    p.write_text("import random\nimport torch\nimport torch.nn as nn\n\n\n"
                 "class Model(nn.Module):\n"
                 "    def __init__(self):\n"
                 "        super().__init__()\n"
                 "        self.w = nn.Parameter(torch.ones(4))\n\n"
                 "    def forward(self, x, alpha, y, k: int):\n"
                 "        return x * alpha * self.w + y * k\n\n\n"
                 "def get_init_inputs():\n    return []\n\n\n" + body)
    return jp.Problem(str(p))


def test_the_model_takes_the_tensors_and_names_them(tmp_path):
    prob = _problem(tmp_path, "def get_inputs():\n"
                              "    return [torch.randn(4), 0.5, torch.randn(4), 3]\n")
    model = prob.build(1, torch.device("cpu"))
    # Built before the first draw, as the reference process does: the
    # draw learns the numbers and binds them to the model.
    x, y = prob.draw(2, torch.device("cpu"))[0]
    assert prob.scalars == [(1, 0.5), (3, 3)]
    assert torch.equal(model(x, y), x * 0.5 + y * 3)
    assert jp.arg_names(model, 2) == ["x", "y"]
    # The parameters keep their names (the kernel ABI's order and the
    # judge's perturbations read them).
    assert [n for n, _ in jp.state_tensors(model)] == ["w"]


def test_a_forward_without_numbers_is_left_alone(tmp_path):
    # A 0-d tensor is a tensor; only the int is a number here.
    prob = _problem(tmp_path, "def get_inputs():\n"
                              "    return [torch.randn(4), torch.tensor(0.5), torch.randn(4), 3]\n")
    prob.draw(1, torch.device("cpu"))
    assert prob.build(1, torch.device("cpu")).kb_scalars == [(3, 3)]
    m = torch.nn.Linear(2, 2)
    assert jp.bind_scalars(m, []) is m and not hasattr(m, "kb_forward")


def test_a_number_that_changes_between_draws_is_refused(tmp_path):
    prob = _problem(tmp_path, "def get_inputs():\n"
                              "    return [torch.randn(4), random.random(), torch.randn(4), 3]\n")
    with pytest.raises(jp.ProblemError, match=r"get_inputs\(\)\[1\] is .* here and .* in another "
                                              r"draw"):
        prob.draw(1, torch.device("cpu"))
        prob.draw(2, torch.device("cpu"))
    # A number in one draw where another had a tensor: the same refusal.
    prob = _problem(tmp_path, "calls = []\n\n\ndef get_inputs():\n"
                              "    calls.append(1)\n"
                              "    a = 0.5 if len(calls) == 1 else torch.tensor(0.5)\n"
                              "    return [torch.randn(4), a, torch.randn(4), 3]\n")
    with pytest.raises(jp.ProblemError, match="a tensor"):
        prob.draw(1, torch.device("cpu"))
        prob.draw(2, torch.device("cpu"))
