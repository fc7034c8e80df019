"""The CEL subset of `triggerPolicy.condition` (ops.spec_executor.conditions), evaluated on input values."""

import pytest

from ops.spec_executor.conditions import ConditionError, UnsupportedCondition, parse_condition

TARGET = "inputs.parameter_values['pipelinechannel--items-loop-item-subvar-target']"
VALUES = {"pipelinechannel--items-loop-item-subvar-target": "gpu", "n": 3, "ratio": 0.5, "flag": True, "text": "7"}


@pytest.mark.parametrize("expression, expected", [
    (f"{TARGET} == 'cpu'", False),
    (f"{TARGET} == 'gpu'", True),
    (f"!({TARGET} == 'cpu')", True),
    (f"!({TARGET} == 'cpu') && {TARGET} == 'gpu'", True),  # an Elif
    (f"!({TARGET} == 'cpu') && !({TARGET} == 'gpu')", False),  # the Else after them
    (f"{TARGET} == 'cpu' || {TARGET} == 'gpu'", True),
    ("int(inputs.parameter_values['n']) >= 3", True),
    ("int(inputs.parameter_values['n']) < 3", False),
    ("inputs.parameter_values['ratio'] <= 0.5", True),
    ("double(inputs.parameter_values['n']) > 2.5", True),
    ("inputs.parameter_values['flag'] == true", True),
    ("inputs.parameter_values['flag'] != true", False),
    ("int(inputs.parameter_values['text']) == 7", True),  # CEL's int() parses a string
    ("inputs.parameter_values['n'] == 3.0", True),  # int and double compare as numbers
    (f"!(!({TARGET} != 'gpu'))", False),
])
def test_the_subset_kfp_compiles_is_evaluated(expression, expected):
    assert parse_condition(expression).holds(VALUES) is expected


@pytest.mark.parametrize("expression", [
    "size(inputs.parameter_values['a']) > 1",
    "inputs.artifacts['a'].uri == 'x'",
    f"{TARGET} == 'cpu' &&",
    f"{TARGET}",
    f"({TARGET} == 'cpu'",
    f"{TARGET} in ['cpu']",
])
def test_anything_else_is_refused_naming_the_expression(expression):
    with pytest.raises(UnsupportedCondition) as error:
        parse_condition(expression)
    assert repr(expression) in str(error.value)


@pytest.mark.parametrize("expression, values, problem", [
    ("inputs.parameter_values['text'] == 7", VALUES, "cannot compare '7' with 7"),
    ("inputs.parameter_values['absent'] == 'x'", VALUES, "has no input parameter 'absent'"),
    ("int(inputs.parameter_values['text']) == 1", {"text": "seven"}, "int('seven') fails"),
    ("inputs.parameter_values['items'] == 'x'", {"items": ["x"]}, "not a primitive value"),
])
def test_what_cel_would_refuse_on_these_inputs_is_an_error_not_false(expression, values, problem):
    with pytest.raises(ConditionError) as error:
        parse_condition(expression).holds(values)
    assert repr(expression) in str(error.value) and problem in str(error.value)
