"""--opt is parsed once (converter.opts) and every stage reads the registered properties."""

from __future__ import annotations

import json

import pytest

from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.opts import REGISTRY, Opts, parse_opts
from pocketbert.converter.transforms import TRANSFORMS


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


def test_every_model_edit_is_a_registered_transform():
    edits = [o.name for o in REGISTRY if not o.quantization]
    assert edits == list(TRANSFORMS)  # same names, same order of application
    assert all(o.action and o.compared for o in REGISTRY if o.exact)
