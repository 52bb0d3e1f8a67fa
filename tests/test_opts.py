"""--opt is parsed once (converter.opts) and every stage reads the registered properties."""

from __future__ import annotations

import json

import pytest

from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.opts import Opts, parse_opts
from pocketbert.converter.transforms import OPTS


def test_parsed_once_into_canonical_order():
    opts = parse_opts(" Int8 ,relu,nonorm,relu")
    assert opts == ("nonorm", "relu", "int8") and json.loads(json.dumps(opts)) == ["nonorm", "relu", "int8"]
    assert parse_opts(None) == () and parse_opts(",") == ()
    with pytest.raises(ConverterInputError, match="unknown --opt 'turbo'"):
        parse_opts("relu,turbo")


def test_properties_decide_what_each_stage_does():
    opts = Opts(["fold", "int8", "nonorm", "relu"])
    assert opts.changing == ("nonorm", "relu") and opts.structural == ("nonorm", "relu")
    assert opts.exact == ("fold",) and opts.quantizes
    assert Opts(["relu"]).only_structural and not Opts(["relu", "fold"]).only_structural
    assert not Opts([]).only_structural and not Opts(["fold"]).quantizes


def test_every_opt_is_a_model_edit_or_a_quantisation():
    assert OPTS.names() == ("nonorm", "relu", "fold", "int8")  # the order of application
    assert [o.name for o in OPTS if o.apply is not None] == [o.name for o in OPTS if not o.quantization]
    assert all(o.action and o.compared for o in OPTS if o.exact)
