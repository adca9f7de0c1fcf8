"""Cost formulas kept as data: they compute, they print, and they accept only arithmetic."""
import pytest

from kernels.formula import Formula


def test_it_computes_and_prints_the_same_expression():
    f = Formula("2*M*N*K + M*N")
    assert f.evaluate({"M": 3, "N": 5, "K": 7}) == 2 * 3 * 5 * 7 + 3 * 5
    assert f.text == "2·M·N·K + M·N" and f.names == {"M", "N", "K"}
    assert Formula("4*B*H*S**2*(D//H) / 2").text == "4·B·H·S²·(D/H) / 2"
    assert Formula("S**3 + S**10").text == "S³ + S¹⁰"


def test_a_categorical_branch_and_its_compared_text():
    f = Formula("(7 if norm == 'layer' else 4) * T")
    assert f.evaluate({"norm": "layer", "T": 2}) == 14 and f.evaluate({"norm": "rms", "T": 2}) == 8
    assert f.compared == {("norm", "layer")}


@pytest.mark.parametrize("expression", ["__import__('os').system('true')", "M.real", "[M]",
                                        "M if M > 1 else 2", "lambda: M"])
def test_anything_but_arithmetic_is_refused(expression):
    with pytest.raises((ValueError, SyntaxError)):
        Formula(expression)


def test_names_are_checked_when_given_and_when_evaluated():
    with pytest.raises(ValueError, match=r"unknown name\(s\) \['Q'\]"):
        Formula("M*Q", names=("M", "N"))
    with pytest.raises(KeyError, match="needs \\['N'\\]"):
        Formula("M*N").evaluate({"M": 1})
