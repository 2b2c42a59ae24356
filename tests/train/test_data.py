#!/usr/bin/env python3
"""Tests of the training-data generator (tools/train/data.py and its modules; docs/training-data.md).

    /usr/bin/python3 tests/train/test_data.py

Generates small splits once (a few seconds) and checks: determinism from the seed, the split
checks (and that each check catches what it is for), every gold call against its tool's schema, the
holdouts, the exact prompt and target text, and the token ids of a tokenizer trained with Needle's
settings.
"""

import collections
import contextlib
import copy
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))

import data  # noqa: E402
import families as F  # noqa: E402
import invented as I  # noqa: E402
import more_families as M  # noqa: E402
import render  # noqa: E402
import schema  # noqa: E402
import slots  # noqa: E402
import smalltalk  # noqa: E402
import tokenizer  # noqa: E402
import wordlists as W  # noqa: E402

SEED = 7
N_TRAIN = 6000
N_EVAL = 400


GROUP = 4


def setUpModule():
    global SPLITS, GROUPED
    SPLITS = data.generate(SEED, N_TRAIN, N_EVAL)
    GROUPED = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP)


def family_of_tool():
    return {v.name: f.name for f in F.FAMILIES for v in f.variants}


class Determinism(unittest.TestCase):
    def test_same_seed_same_bytes_other_seed_other_data(self):
        tmp = tempfile.mkdtemp()
        try:
            outs = []
            for run, seed in enumerate((11, 11, 12)):
                out = os.path.join(tmp, str(run))
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    rc = data.main(["--seed", str(seed), "--train", "1500", "--eval", "150", "--out", out])
                self.assertEqual(rc, 0)
                files = {}
                for name in ("train.jsonl", "A.jsonl", "B.jsonl", "C.jsonl", "stats.json", "manifest.json"):
                    with open(os.path.join(out, name), "rb") as f:
                        files[name] = f.read()
                outs.append(files)
            self.assertEqual(outs[0], outs[1])
            self.assertNotEqual(outs[0]["train.jsonl"], outs[2]["train.jsonl"])
            self.assertNotEqual(outs[0]["A.jsonl"], outs[2]["A.jsonl"])
            lines = outs[0]["train.jsonl"].decode("utf-8").splitlines()
            self.assertEqual(len(lines), 1500)
            self.assertEqual(list(json.loads(lines[0])), data.KEYS)
        finally:
            shutil.rmtree(tmp)

    def test_output_does_not_depend_on_the_string_hash_seed(self):
        # Python randomises string hashing per process, and with it the iteration order of sets of
        # strings: data.py in two processes with different PYTHONHASHSEED must write the same bytes.
        tmp = tempfile.mkdtemp()
        try:
            outs = []
            for hash_seed, extra in (("1", []), ("2", []), ("1", ["--group", "4"]), ("3", ["--group", "4"])):
                out = os.path.join(tmp, f"{hash_seed}{len(extra)}")
                env = dict(os.environ, PYTHONHASHSEED=hash_seed)
                subprocess.run([sys.executable, os.path.join(ROOT, "tools", "train", "data.py"), "--seed", "1",
                                "--train", "300", "--eval", "20", "--out", out] + extra,
                               env=env, check=True, capture_output=True)
                files = {}
                for name in sorted(os.listdir(out)):
                    with open(os.path.join(out, name), "rb") as f:
                        files[name] = f.read()
                outs.append(files)
            self.assertEqual(len(outs[0]), 6)
            self.assertEqual(outs[0], outs[1])
            self.assertEqual(outs[2], outs[3])
            self.assertNotEqual(outs[0]["train.jsonl"], outs[2]["train.jsonl"])
        finally:
            shutil.rmtree(tmp)


class Shape(unittest.TestCase):
    def test_sizes_and_shares(self):
        self.assertEqual({s: len(e) for s, e in SPLITS.items()},
                         {"train": N_TRAIN, "A": N_EVAL, "B": N_EVAL, "C": N_EVAL})
        stats = data.statistics(SPLITS)["train"]
        self.assertTrue(0.08 <= stats["share_no_call"] <= 0.12, stats["share_no_call"])
        self.assertTrue(0.035 <= stats["share_two_calls"] <= 0.065, stats["share_two_calls"])
        self.assertTrue(0.25 <= stats["share_invented_target"] <= 0.36, stats["share_invented_target"])
        self.assertEqual(set(stats["tools_per_prompt"]), {"1", "2", "3", "4", "5", "6"})
        self.assertTrue(0.1 <= stats["share_system"] <= 0.2)
        self.assertTrue(all(ex["calls"] == [] for ex in SPLITS["C"]))
        for split in ("A", "B"):
            self.assertTrue(all(ex["calls"] for ex in SPLITS[split]))

    def test_ids_and_keys(self):
        for split, examples in SPLITS.items():
            for i, ex in enumerate(examples):
                self.assertEqual(list(ex), data.KEYS)
                self.assertEqual(ex["id"], f"{split}-{i:06d}")
                self.assertEqual(ex["split"], split)

    def test_inventory(self):
        self.assertGreaterEqual(len(F.FAMILIES), 25)
        self.assertGreaterEqual(len(F.B_FAMILIES), 5)
        for f in F.FAMILIES:
            self.assertGreaterEqual(len(f.variants), 3, f.name)
            for v in f.variants:
                for d in v.descs:
                    self.assertTrue(3 <= len(d.split()) <= 10, f"{v.name}: description {d!r}")
            if f.split == "train":
                self.assertGreaterEqual(len(f.held_templates), 2, f.name)
        seen = set(family_of_tool())
        self.assertEqual(len(seen), sum(len(f.variants) for f in F.FAMILIES), "tool names are unique")


class Checks(unittest.TestCase):
    def test_generated_splits_pass(self):
        self.assertEqual(data.check_splits(SPLITS), [])

    def problems_after(self, mutate):
        splits = copy.deepcopy(SPLITS)
        mutate(splits)
        return "\n".join(data.check_splits(splits))

    def test_each_check_catches_its_violation(self):
        b_example = SPLITS["B"][0]
        a_example = next(ex for ex in SPLITS["A"] if ex["family"] != "invented" and "+" not in ex["family"])
        one_call = next(ex for ex in SPLITS["train"] if len(ex["calls"]) == 1 and len(ex["calls"][0]["arguments"]) >= 2
                        and any(isinstance(v, str) for v in ex["calls"][0]["arguments"].values()))
        idx = SPLITS["train"].index(one_call)

        def with_b_tool(s):
            b_tool = next(t for t in b_example["tools"] if t["name"] in F.B_TOOL_NAMES)
            s["train"][0]["tools"].append(copy.deepcopy(b_tool))
        self.assertIn("split-B", self.problems_after(with_b_tool))

        def with_b_word(s):
            s["train"][1]["query"] += " and my workout"
        self.assertIn("split-B word 'workout'", self.problems_after(with_b_word))

        def with_held_phrasing(s):
            s["train"][2]["query"] = a_example["query"]
        got = self.problems_after(with_held_phrasing)
        self.assertIn("held-out template text", got)
        self.assertIn("is also in train", got)

        def with_copy(s):
            s["C"].append(copy.deepcopy(s["train"][3]))
            s["C"][-1]["split"] = "C"
        self.assertIn("the same example as", self.problems_after(with_copy))

        def with_unstated_value(s):
            args = s["train"][idx]["calls"][0]["arguments"]
            key = next(k for k, v in args.items() if isinstance(v, str))
            args[key] = args[key] + " extra"
        got = self.problems_after(with_unstated_value)
        self.assertTrue("is not in the query" in got or "is not one of" in got, got)

        def with_swapped_order(s):
            call = s["train"][idx]["calls"][0]
            call["arguments"] = dict(reversed(list(call["arguments"].items())))
        self.assertIn("are not in the order of the properties", self.problems_after(with_swapped_order))

        def with_missing_required(s):
            ex = next(e for e in s["train"] if e["calls"] and
                      by_name(e)[e["calls"][0]["name"]]["parameters"]["required"])
            tool = by_name(ex)[ex["calls"][0]["name"]]
            del ex["calls"][0]["arguments"][tool["parameters"]["required"][0]]
        self.assertIn("is missing", self.problems_after(with_missing_required))

        def with_wrong_number(s):
            ex = next(e for e in s["train"] if e["calls"] and any(
                isinstance(v, int) and not isinstance(v, bool) for v in e["calls"][0]["arguments"].values()))
            args = ex["calls"][0]["arguments"]
            key = next(k for k, v in args.items() if isinstance(v, int) and not isinstance(v, bool))
            args[key] = 987654
        self.assertIn("does not follow from the query", self.problems_after(with_wrong_number))

        def with_seen_combination(s):
            s["A"][0]["tools"] = copy.deepcopy(s["train"][5]["tools"])
        self.assertIn("its tool combination is in train", self.problems_after(with_seen_combination))

        def with_held_value(s):
            ex = s["train"][idx]
            args = ex["calls"][0]["arguments"]
            key = next(k for k, v in args.items() if isinstance(v, str))
            value = sorted(F.HELD_VALUES)[0]
            args[key] = value
            ex["query"] += " " + value
        self.assertIn("held-out value", self.problems_after(with_held_value))

        def with_seen_target_in_b(s):
            ex = s["B"][0]
            ex["calls"] = [copy.deepcopy(one_call["calls"][0])]
            ex["tools"] = copy.deepcopy(one_call["tools"])
            ex["query"] = one_call["query"] + " (B)"
        self.assertIn("a split-B example calls no split-B tool", self.problems_after(with_seen_target_in_b))

        def with_held_invented_word(s):
            word = sorted(I.HELD_WORDS)[0]
            s["train"][4]["tools"].append({"name": f"{word}_thing", "description": "Does a thing.",
                                           "parameters": {"type": "object", "properties": {}, "required": []}})
        self.assertIn("uses held-out invented word", self.problems_after(with_held_invented_word))

        def with_calls_in_c(s):
            s["C"][0]["calls"] = [copy.deepcopy(a_example["calls"][0])]
        self.assertIn("a split-C example has calls", self.problems_after(with_calls_in_c))

        def with_a_value_in_train(s):
            a_value = next(v for ex in s["A"] for v in data.novel_values(ex))
            ex = s["train"][idx]
            args = ex["calls"][0]["arguments"]
            key = next(k for k, v in args.items() if isinstance(v, str))
            args[key] = a_value
            ex["query"] += " " + a_value
        self.assertIn("is also a training argument (split A's values are new)",
                      self.problems_after(with_a_value_in_train))


def by_name(ex):
    return {t["name"]: t for t in ex["tools"]}


class GoldCalls(unittest.TestCase):
    def test_every_call_validates_against_its_tool(self):
        for split, examples in SPLITS.items():
            for ex in examples:
                tools = by_name(ex)
                self.assertTrue(1 <= len(ex["tools"]) <= 6)
                self.assertEqual(len(tools), len(ex["tools"]), "tool names are distinct")
                for t in ex["tools"]:
                    self.assertIsNone(schema.check_tool(t))
                for call in ex["calls"]:
                    self.assertIsNone(schema.validate_call(call, ex["tools"]), ex["id"])
                    props = tools[call["name"]]["parameters"]["properties"]
                    # Only parameters the request gives: every required one, no others than properties.
                    self.assertLessEqual(set(call["arguments"]), set(props))

    def test_copied_strings_are_in_the_request(self):
        for ex in SPLITS["train"] + SPLITS["A"] + SPLITS["B"]:
            tools = by_name(ex)
            for call in ex["calls"]:
                props = tools[call["name"]]["parameters"]["properties"]
                for key, value in call["arguments"].items():
                    if isinstance(value, str) and "enum" not in props[key]:
                        self.assertIn(value, ex["query"], ex["id"])
                    if isinstance(value, str) and "enum" in props[key]:
                        self.assertIn(value, props[key]["enum"])

    def test_two_calls_follow_request_order(self):
        fam = family_of_tool()
        for ex in SPLITS["train"]:
            if len(ex["calls"]) == 2:
                first, second = ex["family"].split("+")
                self.assertEqual(fam.get(ex["calls"][0]["name"], "invented"), first, ex["id"])
                self.assertEqual(fam.get(ex["calls"][1]["name"], "invented"), second, ex["id"])

    def test_no_offered_tool_fits_a_none_request(self):
        fam = family_of_tool()
        for ex in SPLITS["train"] + SPLITS["C"]:
            if ex["calls"] or ex["family"] in ("invented", "chitchat"):
                continue
            banned = data.excluded_families(ex["family"], True)
            for t in ex["tools"]:
                self.assertNotIn(fam.get(t["name"]), banned, ex["id"])

    def test_validator_refuses(self):
        tool = {"name": "t", "description": "A test tool.", "parameters": {"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 0, "maximum": 10}, "s": {"type": "string", "enum": ["a", "b"]},
            "x": {"type": "number"}, "on": {"type": "boolean"}}, "required": ["n"]}}
        ok = {"name": "t", "arguments": {"n": 3, "s": "a", "x": 2.5, "on": True}}
        self.assertIsNone(schema.validate_call(ok, [tool]))
        cases = [({"n": True}, "expected integer"), ({"n": 11}, "above the maximum"), ({"n": -1}, "below the minimum"),
                 ({"n": 1.5}, "expected integer"), ({"n": 1, "s": "c"}, "is not one of"), ({"s": "a"}, "'n' is missing"),
                 ({"n": 1, "y": 2}, "'y' is not a property"), ({"n": 1, "on": 1}, "expected boolean"),
                 ({"n": 1, "x": "2"}, "expected number"), ({"s": "a", "n": 1}, "not in the order")]
        for args, message in cases:
            self.assertIn(message, schema.validate_call({"name": "t", "arguments": args}, [tool]) or "", args)
        self.assertIn("not an offered tool", schema.validate_call({"name": "u", "arguments": {}}, [tool]))
        bad = copy.deepcopy(tool)
        bad["parameters"]["properties"]["s"]["pattern"] = "^a$"
        self.assertEqual(schema.check_tool(bad), "tool 't' parameter 's': 'pattern' is not supported")


class Holdouts(unittest.TestCase):
    def test_split_b_is_unseen_in_train(self):
        train_names = {t["name"] for ex in SPLITS["train"] for t in ex["tools"]}
        self.assertFalse(train_names & F.B_TOOL_NAMES)
        words = set()
        for ex in SPLITS["train"]:
            words |= F.words_in(render.prompt_text(ex))
        self.assertFalse(words & F.B_WORDS, sorted(words & F.B_WORDS))
        for ex in SPLITS["B"]:
            self.assertTrue(any(c["name"] in F.B_TOOL_NAMES for c in ex["calls"]), ex["id"])
        b_families = {f.name for f in F.B_FAMILIES}
        self.assertTrue(all(set(ex["family"].split("+")) <= b_families for ex in SPLITS["B"]))

    def test_split_a_uses_held_out_templates_values_and_combinations(self):
        train_queries = "\n".join(ex["query"] for ex in SPLITS["train"]).lower()
        for frag in data.HELD_FRAGMENTS:
            self.assertNotIn(frag, train_queries)
        for ex in SPLITS["A"]:
            self.assertTrue(data.HELD_FRAGMENT_RE.search(ex["query"].lower()), ex["query"])
        curated_train = set()
        for f in F.TRAIN_FAMILIES:
            for kind in f.slots.values():
                for c in F.value_lists(kind):
                    curated_train.update(c.train)
        for ex in SPLITS["train"]:
            for call in ex["calls"]:
                for v in call["arguments"].values():
                    self.assertNotIn(v, F.HELD_VALUES if isinstance(v, str) else ())
        # Every value of a value source in A is new: never a training argument, never a training
        # value of a curated list; some are held-out curated values, most are built.
        train_arguments = data.string_arguments(SPLITS["train"])
        used_held = built = 0
        for ex in SPLITS["A"]:
            for v in data.novel_values(ex):
                self.assertNotIn(v, train_arguments, ex["id"])
                self.assertNotIn(v, curated_train, ex["id"])
                used_held += v in F.HELD_VALUES
                built += v not in F.HELD_VALUES
        self.assertGreater(used_held, 10)
        self.assertGreater(built, 4 * used_held)
        # The values novel_values finds: family parameters that copy names, places, free text ...
        # and invented tools' free strings; not dates, times, units or enum words.
        ex = {"tools": [F.BY_NAME["calendar_event"].variants[1].tool(random.Random(1))],
              "calls": [{"name": "calendar.add", "arguments": {"summary": "Lantern review", "day": "Friday",
                                                                "start_time": "7pm", "location": "12 Myron Lane"}}]}
        self.assertEqual(data.novel_values(ex), ["Lantern review", "12 Myron Lane"])
        combos = {frozenset(t["name"] for t in ex["tools"]) for ex in SPLITS["train"]}
        for ex in SPLITS["A"]:
            self.assertNotIn(frozenset(t["name"] for t in ex["tools"]), combos)

    def test_invented_holdout(self):
        # An opaque name's random letters never spell a held-out, family or split-B word ("fn_buff";
        # unchecked, about 2 names in 1,000 did).
        rng = random.Random(9)
        for _ in range(20000):
            words = set(F.name_words(I._name(rng, "polish", "lantern", "opaque")))
            self.assertFalse(words & (I.HELD_WORDS | F.FAMILY_WORDS | F.B_WORDS), words)
        held = I.Vocab(True)
        train = I.Vocab(False)
        train_words = set(train.verbs) | set(train.nouns)
        self.assertFalse(train_words & held.held_words)
        n = 0
        for ex in SPLITS["A"]:
            for call in ex["calls"]:
                if call["name"] not in family_of_tool():
                    tool = by_name(ex)[call["name"]]
                    words = F.words_in(tool["name"] + " " + tool["description"])
                    # A held-out verb or noun, or made-up words only: never the training vocabulary.
                    self.assertFalse(words & train_words, tool)
                    n += bool(words & held.held_words)
        self.assertGreater(n, 30)

    def test_no_query_in_two_splits(self):
        owner = {}
        for split, examples in SPLITS.items():
            for ex in examples:
                self.assertEqual(owner.setdefault(ex["query"], split), split, ex["query"])


def groups_of(examples):
    out = {}
    for ex in examples:
        out.setdefault(ex["group"], []).append(ex)
    return list(out.values())


def twin_pairs(groups):
    """(group, its [] twin) for every group followed by a twin: the next group asks only requests of
    it and answers all of them []."""
    for before, group in zip(groups, groups[1:]):
        asked = [ex["query"] for ex in before]
        if not any(ex["calls"] for ex in group) and all(ex["query"] in asked for ex in group):
            yield before, group


def assert_held_out_unchanged(test, splits):
    """Splits A, B and C are those of the grouped data without options, and every split check passes."""
    for split in ("A", "B", "C"):
        test.assertEqual(splits[split], GROUPED[split], split)
    test.assertEqual(data.check_splits(splits), [])


def assert_determinism_and_nothing_drawn_without(test, base, option, value, splits):
    """`splits` (made with `base` and option=value) come out the same again, and the option at 0 draws
    nothing: the data of `base` alone, which differs from `splits`."""
    again = data.generate(SEED, N_TRAIN, N_EVAL, **base, **{option: value})
    test.assertEqual(again["train"], splits["train"])
    plain = data.generate(SEED, N_TRAIN, N_EVAL, **base, **{option: 0.0})
    test.assertEqual(plain["train"], data.generate(SEED, N_TRAIN, N_EVAL, **base)["train"])
    test.assertNotEqual(plain["train"], splits["train"])


def assert_calls_copy_from_requests(test, examples):
    """Every gold call validates against its tool, and every free-text string argument is in the request."""
    for ex in examples:
        tools = by_name(ex)
        for call in ex["calls"]:
            test.assertIsNone(schema.validate_call(call, ex["tools"]), ex["id"])
            props = tools[call["name"]]["parameters"]["properties"]
            for key, value in call["arguments"].items():
                if isinstance(value, str) and "enum" not in props[key]:
                    test.assertIn(value, ex["query"], ex["id"])


class Perturbed(unittest.TestCase):
    """data.py --perturb: training requests with perturbed template words; the held-out splits those
    of the seed without it."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5)

    def test_held_out_splits_are_the_unperturbed_ones_and_the_checks_pass(self):
        assert_held_out_unchanged(self, self.splits)
        train = self.splits["train"]
        self.assertEqual(len(train), N_TRAIN)
        self.assertEqual([ex["id"] for ex in train], [f"train-{i:06d}" for i in range(N_TRAIN)])
        self.assertNotEqual([ex["query"] for ex in train], [ex["query"] for ex in GROUPED["train"]])

    def test_every_call_still_validates_and_copies_from_the_request(self):
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_perturb_template_keeps_slots_and_their_delimiters(self):
        rng = random.Random(3)
        t = slots.Template("remind me to {task} at {time}: {note:q}, please", "imp", "reminder", False)
        seen = set()
        for _ in range(300):
            p = slots.perturb_template(rng, t, slots.LEXICONS["pseudo"])
            self.assertEqual(p.slot_order, t.slot_order)
            self.assertIn(" {task} ", p.text)      # the words around a slot may change, never glue to it
            self.assertIn(": {note:q},", p.text)
            seen.add(p.text)
        self.assertGreater(len(seen), 50)
        self.assertIn(t.text, seen)                # sometimes nothing changes


class PerturbedFrames(unittest.TestCase):
    """data.py --perturb-invented: the invented tools' request frames perturbed too (perturb_frame);
    the held-out splits unchanged, and nothing drawn without the option."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, perturb_invented=0.8)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])
        invented = sum(ex["family"] == "invented" for ex in self.splits["train"])
        self.assertGreater(invented, 0.15 * N_TRAIN)

    def test_without_the_option_the_data_is_that_of_perturb_alone(self):
        plain = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, perturb_invented=0.0)
        self.assertEqual(plain["train"], data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5)["train"])
        self.assertNotEqual([ex["query"] for ex in plain["train"]], [ex["query"] for ex in self.splits["train"]])

    def test_perturb_frame_keeps_the_slots_and_sometimes_leads_with_new_words(self):
        rng = random.Random(5)
        frames = [t for t in I.REQUEST_TEMPLATES[False, True] if t.starts_with_slot]  # "{vp} with {plist}"
        leads, texts = 0, set()
        for i in range(600):
            t = frames[i % len(frames)]
            p = data.perturb_frame(rng, t)
            self.assertEqual(p.slot_order, t.slot_order)
            self.assertEqual(p.held, t.held)
            if not p.text.startswith("{vp}"):
                leads += 1
                self.assertEqual(p.kind, "other")   # a lead is not a polite prefix's place
                self.assertRegex(p.text, r"^[a-z][^{]* \{vp\}")
            texts.add(p.text)
        self.assertGreater(leads, 0.3 * 600)
        self.assertLess(leads, 0.5 * 600)
        self.assertGreater(len(texts), 200)


class Twins(unittest.TestCase):
    """data.py --twins: a share of the perturbed training groups, each followed by its [] twin (the
    same requests against tools that none of them fits)."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.3)

    def test_held_out_splits_are_unchanged_and_the_checks_pass(self):
        assert_held_out_unchanged(self, self.splits)
        train = self.splits["train"]
        self.assertEqual([ex["id"] for ex in train], [f"train-{i:06d}" for i in range(N_TRAIN)])
        share = data.statistics(self.splits)["train"]["share_no_call"]
        self.assertGreater(share, 0.2)  # 10% without twins
        self.assertLess(share, 0.45)

    def test_a_twin_asks_its_group_again_against_tools_none_of_them_fits(self):
        fam = family_of_tool()
        groups = groups_of(self.splits["train"])
        twins = 0
        for before, group in twin_pairs(groups):
            twins += 1
            called = {c["name"] for ex in before for c in ex["calls"]}
            self.assertTrue(called, group[0]["id"])
            offered = {t["name"] for t in group[0]["tools"]}
            self.assertFalse(offered & called, group[0]["id"])
            self.assertTrue(1 <= len(offered) <= data.MAX_TOOLS, group[0]["id"])
            offered_families = {fam.get(name, "invented") for name in offered}
            for ex in group:
                self.assertEqual(ex["system"], before[0]["system"])
                for part in ex["family"].split("+"):
                    if part not in ("invented", "chitchat"):
                        self.assertFalse(offered_families & data.excluded_families(part, True), (ex["id"], part))
        self.assertGreater(twins, 0.15 * len(groups))

    def test_determinism_and_no_twins_without_the_option(self):
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.3)
        self.assertEqual(again["train"], self.splits["train"])
        plain = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5)
        self.assertLess(data.statistics(plain)["train"]["share_no_call"], 0.15)


class NearTwins(unittest.TestCase):
    """data.py --near-twins: in a share of the [] twins a tool that the group's requests call is
    replaced by its near miss (Generator.near_miss): the same parameters, and in its name and
    description another noun than the one every request calling it names; nothing drawn without the
    option."""

    BASE = dict(group=GROUP, perturb=0.5, twins=0.3, rename=0.3)

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, **cls.BASE, near_twins=1.0)

    @staticmethod
    def near_misses(before, twin):
        """(called tool, its near miss in the twin, the words only the first names, the words only the
        second names) for every tool of the twin with a called tool's parameters and a name that
        differs from its name in one word."""
        called = {c["name"] for ex in before for c in ex["calls"]}
        tools = {t["name"]: t for t in before[0]["tools"] if t["name"] in called}
        out = []
        for new in twin[0]["tools"]:
            for old in tools.values():
                if new["parameters"] == old["parameters"] and new["name"] != old["name"]:
                    a, b = set(F.name_words(old["name"])), set(F.name_words(new["name"]))
                    if len(a - b) == 1 and len(b - a) == 1:
                        out.append((old, new, a - b, b - a))
        return out

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_a_near_miss_differs_from_its_tool_by_the_noun_its_requests_name(self):
        pairs = list(twin_pairs(groups_of(self.splits["train"])))
        with_near = 0
        for before, twin in pairs:
            misses = self.near_misses(before, twin)
            with_near += bool(misses)
            asked = " ".join(ex["query"] for ex in twin).lower()
            for old, new, (noun,), (other,) in misses:
                # every request that called the tool names its noun; none of the group names the new one
                for ex in before:
                    if any(c["name"] == old["name"] for c in ex["calls"]):
                        self.assertRegex(ex["query"].lower(), r"\b" + noun[:-1], (ex["id"], noun))
                self.assertNotRegex(asked, r"\b" + re.escape(other) + r"\b", twin[0]["id"])
                self.assertNotEqual(new["description"], old["description"])
                self.assertIn(other, new["description"].lower() + " " + new["name"].lower())
            for ex in twin:
                self.assertEqual(ex["calls"], [])
        self.assertGreater(len(pairs), 0.15 * len(groups_of(self.splits["train"])))
        # a family tool whose noun a request does not name ("wake me at 7", set_alarm) is dropped
        self.assertGreater(with_near, 0.5 * len(pairs))
        self.assertLess(with_near, len(pairs))

    def test_determinism_and_nothing_drawn_without_the_option(self):
        assert_determinism_and_nothing_drawn_without(self, self.BASE, "near_twins", 1.0, self.splits)


class VerbMisses(unittest.TestCase):
    """data.py --verb-misses: in a share of the near misses of invented tools (--near-twins) the tool
    keeps its noun and parameters and takes another verb, in its name and description, where every
    request calling it names its verb; nothing drawn without the option."""

    BASE = dict(group=GROUP, perturb=0.5, twins=0.3, near_twins=1.0)

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, **cls.BASE, verb_misses=0.5)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_a_verb_miss_keeps_the_noun_and_changes_the_verb_the_requests_name(self):
        by_verb = by_noun = 0
        for before, twin in twin_pairs(groups_of(self.splits["train"])):
            asked = " ".join(ex["query"] for ex in twin).lower()
            for old, new, (gone,), (other,) in NearTwins.near_misses(before, twin):
                if "invented" not in {p for ex in before for p in ex["family"].split("+")}:
                    continue
                callers = [ex for ex in before if any(c["name"] == old["name"] for c in ex["calls"])]
                # the word that changed is the verb when the description's first word is made from it
                verb = old["description"].split()[0].lower() in (gone, data.I.third_person(gone)) or \
                    re.search(r"\bto " + re.escape(gone) + r"\b", old["description"].lower())
                if not verb:
                    by_noun += 1
                    continue
                by_verb += 1
                for ex in callers:
                    self.assertRegex(ex["query"], data.verb_pattern(gone), ex["id"])
                self.assertNotRegex(asked, data.verb_pattern(other), twin[0]["id"])
                # the noun stays in the name and the description; the old verb leaves both
                self.assertEqual(set(F.name_words(old["name"])) - {gone}, set(F.name_words(new["name"])) - {other})
                self.assertNotRegex(new["description"], data.verb_pattern(gone))
                self.assertRegex(new["description"], data.verb_pattern(other))
                for ex in twin:
                    self.assertEqual(ex["calls"], [])
        self.assertGreater(by_verb, 20)
        self.assertGreater(by_noun, 20)

    def test_determinism_and_nothing_drawn_without_the_option(self):
        assert_determinism_and_nothing_drawn_without(self, self.BASE, "verb_misses", 0.5, self.splits)


class Renamed(unittest.TestCase):
    """data.py --rename: in a share of the perturbed training groups, a noun that a called family
    tool's name shares with its requests is renamed, in the tool and in those requests. Subclasses run
    these tests on data with one more option (OPTION) on top of BASE."""

    BASE = dict(group=GROUP, perturb=0.5, twins=0.3)
    OPTION = {"rename": 0.5}  # the option under test; 0 must draw nothing

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, **cls.BASE, **cls.OPTION)

    def renamed_calls(self):
        """(example, call, the family variant it was, the renamed singular, the new noun, whether the name
        has it in the other number) for every call of a family request whose tool is no family variant."""
        variants = {v.name: v for f in F.FAMILIES for v in f.variants}
        out = []
        for ex in self.splits["train"]:
            parts = ex["family"].split("+")
            for k, call in enumerate(ex["calls"]):
                if call["name"] in variants or parts[min(k, len(parts) - 1)] in ("invented", "chitchat"):
                    continue
                tool = by_name(ex)[call["name"]]
                words = F.name_words(call["name"])
                # the new noun: a word of the name, or its singular (lanterns, glasses, berries)
                news = sorted(set(words) | {w[:-1] for w in words} | {w[:-2] for w in words}
                              | {w[:-3] + "y" for w in words})
                family = F.BY_NAME[parts[min(k, len(parts) - 1)]]
                found = [(v, singular, new, flip) for v in family.variants for singular in data.RENAME_NOUNS
                         for new in news for flip in (False, True)
                         if {singular, data.RENAME_NOUNS[singular]} & set(F.name_words(v.name))
                         and data.rename_identifier(v.name, singular, new, flip) == call["name"]
                         and [p.name for p in v.params] == list(tool["parameters"]["properties"])
                         and tool["description"] in [data.rename_text(d, singular, new) for d in v.descs]
                         and re.search(r"\b(?:" + new + "|" + data.plural(new) + ")", ex["query"], re.I)]
                self.assertTrue(found, (ex["id"], call["name"], ex["query"]))
                out.append((ex, call, *found[0]))
        return out

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_a_renamed_tool_and_its_requests_share_the_new_noun_and_not_the_old(self):
        renamed = self.renamed_calls()
        self.assertGreater(len({ex["group"] for ex, *_ in renamed}), 0.05 * len(groups_of(self.splits["train"])))
        for ex, call, variant, singular, new, flip in renamed:
            tool = by_name(ex)[call["name"]]
            self.assertIsNone(data.noun_pattern(singular).search(ex["query"]), (ex["id"], ex["query"]))
            # (renamed_calls found the variant with the tool's parameters and its description renamed)
            for article, word in re.findall(r"\b(an?) (" + new + "|" + data.plural(new) + r")\b", ex["query"], re.I):
                self.assertEqual(article.lower(), "an" if word[0].lower() in "aeiou" else "a", ex["query"])
            for other in ex["tools"]:
                if other is not tool:
                    self.assertNotIn(new, F.name_words(other["name"]), ex["id"])

    def test_twins_of_renamed_groups_drop_the_renamed_tool(self):
        groups = groups_of(self.splits["train"])
        twins = 0
        for before, group in twin_pairs(groups):
            called = {c["name"] for ex in before for c in ex["calls"]}
            self.assertFalse({t["name"] for t in group[0]["tools"]} & called, group[0]["id"])
            twins += 1
        self.assertGreater(twins, 0.15 * len(groups))

    def test_articles_cases_and_identifier_styles(self):
        self.assertEqual(data.rename_text("Send an email, then an Email.", "email", "glass"),
                         "Send a glass, then a Glass.")
        self.assertEqual(data.rename_text("A timer and two timers", "timer", "owl"), "An owl and two owls")
        self.assertEqual(data.rename_text("SMS Bo; timekeeper timer", "sms", "owl"), "OWL Bo; timekeeper timer")
        for name, singular, want in [("set_timer", "timer", "set_glass"), ("createTimer", "timer", "createGlass"),
                                     ("turn_on_lights", "light", "turn_on_glasses"),
                                     ("addCalendarEvent", "event", "addCalendarGlass"),
                                     ("smart_home.light", "light", "smart_home.glass"),
                                     ("send_sms", "sms", "send_glass"), ("set_timer", "alarm", "set_timer")]:
            self.assertEqual(data.rename_identifier(name, singular, "glass"), want)
        for name, singular, want in [("set_timer", "timer", "set_glasses"), ("turn_on_lights", "light", "turn_on_glass"),
                                     ("createTimer", "timer", "createGlasses"), ("send_sms", "sms", "send_glasses")]:
            self.assertEqual(data.rename_identifier(name, singular, "glass", flip=True), want)

    def test_determinism_and_nothing_drawn_without_the_option(self):
        ((option, value),) = self.OPTION.items()
        assert_determinism_and_nothing_drawn_without(self, self.BASE, option, value, self.splits)


class Restyled(unittest.TestCase):
    """data.py --restyle: a share of the training split's family tools, called ones and distractors,
    in groups and in their [] twins, take their name in another style (data.restyled_name): the same
    words in the same roles, with a prefix or suffix now and then; the calls name the new name."""

    BASE = dict(group=GROUP, perturb=0.5, twins=0.3)

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, **cls.BASE, restyle=0.5)

    @staticmethod
    def same_words(restyled, name):
        """Whether `restyled` has the words of `name`, and at most one of restyled_name's prefixes or
        suffixes besides."""
        words = sorted(F.name_words(restyled))
        return words == sorted(F.name_words(name)) or any(
            words == sorted(F.name_words(name) + F.name_words(a))
            for a in data.RESTYLE_PREFIXES + data.RESTYLE_SUFFIXES)

    def variant_of(self, tool):
        """The family variant a restyled tool was made from (its parameters, a description of its
        and the same words in its name), or None."""
        for v in data.VARIANTS.values():
            if tool["description"] in v.descs and [p.name for p in v.params] == list(tool["parameters"]["properties"]) \
                    and self.same_words(tool["name"], v.name):
                return v
        return None

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_about_the_share_of_family_tools_is_restyled_and_calls_name_the_new_name(self):
        plain = restyled = 0
        for ex in self.splits["train"]:
            parts = ex["family"].split("+")
            for tool in ex["tools"]:
                if tool["name"] in data.VARIANTS:
                    plain += 1
                elif self.variant_of(tool) is not None:
                    restyled += 1
            for k, call in enumerate(ex["calls"]):
                family = parts[min(k, len(parts) - 1)]
                if family in ("invented", "chitchat"):
                    continue
                self.assertIn(call["name"], by_name(ex), ex["id"])
                if call["name"] not in data.VARIANTS:
                    variant = self.variant_of(by_name(ex)[call["name"]])
                    self.assertIsNotNone(variant, (ex["id"], call["name"]))
                    self.assertEqual(variant.family.name, family, ex["id"])
        share = restyled / (plain + restyled)
        self.assertGreater(share, 0.4)
        self.assertLess(share, 0.6)

    def test_twins_take_restyled_distractors_and_drop_the_called_tools(self):
        pairs = list(twin_pairs(groups_of(self.splits["train"])))
        self.assertGreater(len(pairs), 0.15 * len(groups_of(self.splits["train"])))
        with_restyled = 0
        for before, twin in pairs:
            called = {c["name"] for ex in before for c in ex["calls"]}
            names = {t["name"] for t in twin[0]["tools"]}
            self.assertFalse(names & called, twin[0]["id"])
            new = [t for t in twin[0]["tools"] if t["name"] not in {u["name"] for u in before[0]["tools"]}]
            with_restyled += any(t["name"] not in data.VARIANTS and self.variant_of(t) for t in new)
        self.assertGreater(with_restyled, 0.1 * len(pairs))

    def test_restyled_name_keeps_the_words_and_roles(self):
        rng = random.Random(3)
        seen = {data.restyled_name(rng, "set_timer") for _ in range(300)}
        self.assertEqual(seen, {"setTimer", "SetTimer", "timer.set", "api_setTimer", "svc_setTimer",
                                "app.setTimer", "my_setTimer", "tools.setTimer", "cmd_setTimer",
                                "setTimer_v2", "setTimer_tool", "setTimer_api"} - set(data.VARIANTS))
        seen = {data.restyled_name(rng, "timer.create") for _ in range(300)}
        # (createTimer is a variant of the timer family's: never made)
        self.assertTrue({"create_timer", "CreateTimer", "api_create_timer"} <= seen, seen)
        self.assertNotIn("createTimer", seen)
        self.assertFalse(any(n.startswith("timer") for n in seen), seen)
        for name in data.VARIANTS:
            new = data.restyled_name(rng, name)
            self.assertNotIn(new, data.VARIANTS, name)
            self.assertTrue(self.same_words(new, name), (name, new))
        self.assertIsNone(data.restyled_name(rng, "set_timer", taken={
            n for n in {data.restyled_name(random.Random(k), "set_timer") for k in range(500)}}))

    def test_determinism_and_nothing_drawn_without_the_option(self):
        assert_determinism_and_nothing_drawn_without(self, self.BASE, "restyle", 0.5, self.splits)


class RenameForms(Renamed):
    """data.py --rename-forms: a share of the renamed tools take the new noun in their name in the other
    number than the family's name had; their descriptions and requests as --rename alone makes them.
    Runs Renamed's tests on this data too (renamed_calls accepts either number)."""

    BASE = dict(Renamed.BASE, rename=0.5)
    OPTION = {"rename_forms": 0.5}

    def test_about_half_the_renamed_names_change_number(self):
        flips = collections.Counter(flip for ex, call, variant, singular, new, flip in self.renamed_calls())
        self.assertGreater(flips[True], 0.3 * sum(flips.values()), flips)
        self.assertGreater(flips[False], 0.3 * sum(flips.values()), flips)


class RenameWords(Renamed):
    """data.py --rename-words: the renamed tools' new nouns come from the word source (wamerican), not
    the invented tools' nouns or pseudo-words. Runs Renamed's tests on this data too."""

    BASE = dict(Renamed.BASE, rename=0.5)
    OPTION = {"rename_words": 1.0}

    def test_new_nouns_are_word_source_words(self):
        # renamed_calls reads the noun back from the name: "amoralitie" and "amorality" both make
        # "amoralities"; the word is the one of the word source with that plural
        by_plural = {data.plural(w): w for w in W.WORD_SOURCE.common}
        news = {by_plural.get(data.plural(new)) for ex, call, variant, singular, new, flip in self.renamed_calls()}
        self.assertNotIn(None, news)
        self.assertGreater(len(news), 20)
        vocab = I.Vocab(False)
        for new in news:
            self.assertNotIn(new, vocab.nouns)
            self.assertNotIn(new, vocab.held_words)
            self.assertNotIn(new, F.FAMILY_WORDS)
            self.assertIsNone(data.RENAME_WORD_SKIP.search(new), new)

    def test_no_new_noun_whose_plural_is_held_out_or_a_family_word(self):
        # a renamed name or request may take the plural: "bellow" would make add_bellows ("bellows" is
        # held out for split A), "calorie" split B's "calories"
        gen = data.Generator(SEED, data.Shares(perturb=0.5, rename=0.5, rename_words=1.0))
        held = gen.vocab[False].held_words
        for word in ("bellow", "calorie", "minute", "guest"):
            self.assertFalse(gen.may_rename_to(word), word)
        self.assertTrue(gen.may_rename_to("lantern"))
        for word in W.WORD_SOURCE.common:
            if gen.may_rename_to(word):
                for form in (word, data.plural(word)):
                    self.assertNotIn(form, held)
                    self.assertNotIn(form, F.FAMILY_WORDS)


class SmallTalk(unittest.TestCase):
    """data.py --small-talk: a larger share of the perturbed training split's [] requests is small
    talk, most of it composed (smalltalk.compose); nothing drawn without the option."""

    # The frames of the held-out lines (wordlists.CHITCHAT, split C): no composed line may use one.
    HELD_FRAMES = ["who made you", "do you like", "what do you think about", "that's all", "cheers",
                   "robot", "feelings", "dream", "mate"]

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2, small_talk=0.4)
        cls.plain = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2, small_talk=0.0)

    @staticmethod
    def chitchat(splits):
        return [ex for ex in splits["train"] if ex["family"] == "chitchat"]

    @staticmethod
    def from_fixed_list(query):
        """The query holds a line of the fixed training list (with a polite opening, perhaps)."""
        return any(line.lower() in query.lower() for line in data.CHITCHAT_TRAIN)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_small_talk_is_a_larger_share_and_mostly_new_lines(self):
        talk = self.chitchat(self.splits)
        self.assertGreater(len(talk), 2 * len(self.chitchat(self.plain)))
        self.assertTrue(all(ex["calls"] == [] for ex in talk))
        composed = {ex["query"] for ex in talk if not self.from_fixed_list(ex["query"])}
        self.assertGreater(len(composed), 0.5 * len(talk))

    def test_composed_lines_vary_and_keep_out_of_the_held_out_lines(self):
        for line in data.CHITCHAT_HELD:  # the frames cover every held-out line
            self.assertTrue(any(f in line.lower() for f in self.HELD_FRAMES), line)
        rng = random.Random(11)
        lines = [smalltalk.compose(rng) for _ in range(20000)]
        self.assertGreater(len(set(lines)), 10000)
        for line in set(lines):
            self.assertFalse([f for f in self.HELD_FRAMES if f in line.lower()], line)
            self.assertIsNone(re.search(r"[0-9]", line), line)  # nothing a tool could take as a value
            self.assertIsNone(data.HELD_FRAGMENT_RE.search(line.lower()), line)

    def test_determinism_and_nothing_drawn_without_the_option(self):
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2, small_talk=0.4)
        self.assertEqual(again["train"], self.splits["train"])
        for ex in self.chitchat(self.plain):
            self.assertTrue(self.from_fixed_list(ex["query"]), ex["query"])
        self.assertNotEqual(self.plain["train"], self.splits["train"])


class MoreInvented(unittest.TestCase):
    """data.py --invented: that share of the perturbed training split's call clauses comes from
    invented tools; the held-out splits stay as they are; 0 keeps the third drawn before."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented=0.6)
        cls.plain = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5)

    @staticmethod
    def invented_share(splits):
        """The share of the training split's calls that call an invented tool."""
        calls = [c for ex in splits["train"] for c in ex["calls"]]
        invented = {t["name"] for ex in splits["train"] for t in ex["tools"] if t["name"] not in data.VARIANTS}
        return sum(c["name"] in invented for c in calls) / len(calls)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])

    def test_the_share_of_invented_calls(self):
        # A set's tools fill up as a group goes on, so a group's later members call a tool of the
        # other kind at times: the share lands near, not at, the weight.
        plain, more = self.invented_share(self.plain), self.invented_share(self.splits)
        self.assertLess(abs(plain - 0.33), 0.06, plain)
        self.assertLess(abs(more - 0.6), 0.08, more)

    def test_determinism(self):
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented=0.6)
        self.assertEqual(again["train"], self.splits["train"])


class InventedNouns(unittest.TestCase):
    """data.py --invented-nouns: training requests that name an invented tool by its noun alone, never
    beside another tool that holds the noun; the held-out splits stay as they are."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented_nouns=0.5)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented_nouns=0.5)
        self.assertEqual(again["train"], self.splits["train"])

    def test_a_request_by_the_noun_names_no_verb_and_is_recorded(self):
        gen = data.Generator(SEED, data.Shares(perturb=0.5, invented_nouns=1.0))
        gen.split_now = "train"
        for _ in range(200):
            clause = gen.invented_clause(False)
            query = gen.single_text(clause)
            words = re.findall(r"[a-z]+", query.lower())
            self.assertEqual(gen.by_noun[query], clause.inv.noun, query)
            self.assertTrue(clause.inv.noun in words or I.plural(clause.inv.noun) in words, query)
            self.assertNotIn(clause.inv.verb, words, query)
            self.assertEqual(clause.template.kind, "other")  # never one clause of two

    def test_names_noun_elsewhere(self):
        lantern = {"name": "polish_lantern", "description": "Polishes a lantern.", "parameters": {}}
        opaque = {"name": "fn_x2", "description": "Dusts the given lantern.", "parameters": {}}
        other = {"name": "tune_violin", "description": "Tunes a violin.", "parameters": {}}
        ex = {"tools": [lantern, other], "calls": [{"name": "polish_lantern", "arguments": {}}]}
        self.assertFalse(data.names_noun_elsewhere(ex, "lantern"))
        self.assertFalse(data.names_noun_elsewhere(ex, None))
        self.assertTrue(data.names_noun_elsewhere(dict(ex, tools=[lantern, opaque]), "lantern"))
        self.assertTrue(data.names_noun_elsewhere(dict(ex, calls=[]), "lantern"))  # a [] twin
        self.assertFalse(data.names_noun_elsewhere(dict(ex, calls=[]), "violins"))


class OpenToolWords(unittest.TestCase):
    """data.py --invented-words: training invented tools named by words of the word source, targets
    and distractors alike; split A's invented tools keep their held-out words."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented_words=0.8)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, invented_words=0.8)
        self.assertEqual(again["train"], self.splits["train"])

    def test_training_tools_take_word_source_words_and_held_out_ones_do_not(self):
        gen = data.Generator(SEED, data.Shares(perturb=0.5, invented_words=1.0))
        train, held = gen.vocab[False], gen.vocab[True]
        common = set(W.WORD_SOURCE.common)
        closed = set(train.verbs) | set(train.nouns)
        opened = 0
        for _ in range(300):
            inv = gen.invent(train)
            for word in (inv.verb, inv.noun):
                self.assertIn(word, common)
                self.assertTrue(gen.may_rename_to(word), word)  # no family's, split B's or A's word
            opened += inv.verb not in closed and inv.noun not in closed
        self.assertGreater(opened, 280)  # the 285 closed words are a sliver of the ~60,000
        for _ in range(100):  # a near miss keeps the word it is given
            self.assertEqual(gen.invent(train, verb="polish").verb, "polish")
        for _ in range(300):  # split A's tools: its held-out words or pseudo-words, never the source's
            inv = gen.invent(held)
            self.assertTrue(inv.verb in held.verbs or inv.verb not in common, inv.verb)
            self.assertTrue(inv.noun in held.nouns or inv.noun not in common, inv.noun)

    def test_the_training_split_calls_tools_of_new_words(self):
        train = data.Generator(SEED).vocab[False]
        closed = set(train.verbs) | set(train.nouns)
        names = {c["name"] for ex in self.splits["train"] for c in ex["calls"] if ex["family"] == "invented"}
        common = set(W.WORD_SOURCE.common)
        words = [w for n in names for w in F.name_words(n)]
        new = sum(w in common and w not in closed for w in words) / len(words)
        # 0.8 of the tools, less the opaque names (op_4kx) and prefixes (svc_); 0.04 without the option
        self.assertGreater(new, 0.5, new)


class MoreFamilies(unittest.TestCase):
    """data.py --more-families: training requests and tools of the 25 extra families
    (more_families.py), which never reach a held-out split and leave the data without the option as
    it was."""

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2, more_families=0.4)
        cls.plain = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])
        again = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, perturb=0.5, twins=0.2, more_families=0.4)
        self.assertEqual(again["train"], self.splits["train"])
        self.assertNotEqual(self.splits["train"], self.plain["train"])

    def test_extra_families_are_asked_and_offered_in_training_only(self):
        extra = {v.name: f.name for f in M.EXTRA_FAMILIES for v in f.variants}
        train = self.splits["train"]
        first = {f.name for f in M.EXTRA_FAMILIES}
        asked = collections.Counter(ex["family"] for ex in train if ex["family"] in first)
        self.assertEqual(set(asked), first)  # every one of the 25 is asked for (the second 25 never)
        self.assertFalse({ex["family"] for ex in train} & {f.name for f in M.SECOND_FAMILIES})
        family_requests = sum(ex["family"] in F.BY_NAME for ex in train)
        self.assertAlmostEqual(sum(asked.values()) / family_requests, 0.4, delta=0.08)
        called = {c["name"] for ex in train for c in ex["calls"]}
        self.assertTrue(called & set(extra))
        # An extra tool offered to a one-call request of another family is a distractor: never called.
        offered_aside = 0
        for ex in train:
            for t in ex["tools"] if len(ex["calls"]) <= 1 else ():
                if t["name"] in extra and extra[t["name"]] != ex["family"]:
                    offered_aside += 1
                    self.assertNotIn(t["name"], {c["name"] for c in ex["calls"]}, ex["id"])
        self.assertGreater(offered_aside, 100)
        for ex in self.plain["train"]:
            self.assertFalse({t["name"] for t in ex["tools"]} & set(extra), ex["id"])
        for split in ("A", "B", "C"):
            for ex in self.splits[split]:
                self.assertFalse({t["name"] for t in ex["tools"]} & set(extra), ex["id"])

    def test_a_conflicting_or_near_family_is_never_offered_alone_for_a_request_no_tool_fits(self):
        for ex in self.splits["train"]:
            if ex["calls"] or ex["family"] not in M.EXTRA_BY_NAME:
                continue
            fams = {data.VARIANTS[t["name"]].family.name for t in ex["tools"] if t["name"] in data.VARIANTS}
            self.assertFalse(fams & data.excluded_families(ex["family"], True), ex["id"])

    def test_no_tool_word_of_theirs_names_an_invented_or_renamed_tool(self):
        gen = data.Generator(SEED, data.Shares(perturb=0.5, more_families=0.4))
        for word in ("wifi", "vacuum", "sprinkler", "coffee", "library", "parking"):
            self.assertIn(word, M.EXTRA_WORDS)
            self.assertFalse(gen.may_rename_to(word), word)
        self.assertTrue(data.Generator(SEED).may_rename_to("wifi"))  # without the option, as before

    def test_the_checks_catch_a_split_b_word_and_a_clash_with_invented_words(self):
        M.check()
        for tool, why in (("track_parcel", "split-B word"), ("polish_modem", "invented word 'polish'"),
                          ("set_timer", "a family's already")):
            bad = F.Family("bad_extra", split="extra", slots={"x": slots.Values(["a b"], slots.event_title)},
                           variants=[F.V(tool, "A tool.", F.P("x", "string", "x", req=True))], imp=["do {x}"])
            M.EXTRA_FAMILIES.append(bad)
            try:
                with self.assertRaisesRegex(ValueError, why):
                    M.check()
            finally:
                M.EXTRA_FAMILIES.remove(bad)
        M.check()


class ExtraBatchChecks:
    """What a batch of extra families after the first 25 (more_families.SECOND_FAMILIES, THIRD_FAMILIES)
    must show when its data.py option draws from it: a share of the extra-family requests, and their
    tools, from the batch, in training only; without the option the data is what it was. Mixed into
    one TestCase per batch, which names the batch and its option in the attributes below."""

    batch = []  # the batch's families (the list itself: a test adds a bad family to it for a while)
    earlier = []  # the extra families drawn before it existed
    option = ""  # its Shares field ("second_families")
    share = 0.0  # the share the data is made with
    before = {}  # the other shares, with which the data is made with and without the option
    words, batch_words = (), set()  # some of its tool words (of batch_words, its WORDS): no renamed tool takes one
    bad_tool, bad_error = "", ""  # a tool name that check() must refuse in the batch, and why

    @classmethod
    def setUpClass(cls):
        cls.splits = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, **cls.before, **{cls.option: cls.share})
        cls.without = data.generate(SEED, N_TRAIN, N_EVAL, group=GROUP, **cls.before)

    def test_held_out_splits_are_unchanged_and_every_call_copies_from_the_request(self):
        # (That the data without the option is the data made before the batch existed is checked by
        # making the full command of the run before it again: training-data.md.)
        assert_held_out_unchanged(self, self.splits)
        assert_calls_copy_from_requests(self, self.splits["train"])
        self.assertNotEqual(self.splits["train"], self.without["train"])

    def test_the_batch_is_asked_and_offered_in_training_only(self):
        earlier = {f.name for f in self.earlier}
        names = {f.name for f in self.batch}
        tools = {v.name for f in self.batch for v in f.variants}
        train = self.splits["train"]
        asked = collections.Counter(ex["family"] for ex in train if ex["family"] in names)
        self.assertEqual(set(asked), names)  # every family of the batch is asked for
        extra_requests = sum(ex["family"] in earlier | names for ex in train)
        self.assertAlmostEqual(sum(asked.values()) / extra_requests, self.share, delta=0.08)
        self.assertTrue({c["name"] for ex in train for c in ex["calls"]} & tools)
        self.assertTrue({t["name"] for ex in train for t in ex["tools"]} & tools)
        for ex in self.without["train"]:
            self.assertNotIn(ex["family"], names, ex["id"])
            self.assertFalse({t["name"] for t in ex["tools"]} & tools, ex["id"])
        for split in ("A", "B", "C"):
            for ex in self.splits[split]:
                self.assertFalse({t["name"] for t in ex["tools"]} & tools, ex["id"])

    def test_a_conflicting_or_near_family_is_never_offered_alone_for_a_request_no_tool_fits(self):
        names = {f.name for f in self.batch}
        seen = 0
        for ex in self.splits["train"]:
            if ex["calls"] or ex["family"] not in names:
                continue
            seen += 1
            fams = {data.VARIANTS[t["name"]].family.name for t in ex["tools"] if t["name"] in data.VARIANTS}
            self.assertFalse(fams & data.excluded_families(ex["family"], True), ex["id"])
        self.assertGreater(seen, 20)

    def test_no_tool_word_of_theirs_names_a_renamed_tool_with_the_option(self):
        for word in self.words:
            self.assertIn(word, self.batch_words)
            self.assertFalse(data.Generator(SEED, data.Shares(**self.before, **{self.option: 0.3})).may_rename_to(word),
                             word)
            self.assertTrue(data.Generator(SEED, data.Shares(**self.before)).may_rename_to(word), word)

    def test_main_refuses_it_without_more_families_and_the_checks_cover_them(self):
        flag = data.option(self.option)
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            data.main(["--out", os.path.join(tempfile.gettempdir(), "never-written"), "--perturb", "0.5", flag, "0.5"])
        self.assertIn(f"{flag} needs --more-families", err.getvalue())
        bad = F.Family("bad_" + self.option, split="extra", slots={"x": slots.Values(["a b"], slots.event_title)},
                       variants=[F.V(self.bad_tool, "A tool.", F.P("x", "string", "x", req=True))], imp=["do {x}"])
        self.batch.append(bad)
        try:
            with self.assertRaisesRegex(ValueError, self.bad_error):
                M.check()
        finally:
            self.batch.remove(bad)
        M.check()


class SecondFamilies(ExtraBatchChecks, unittest.TestCase):
    """data.py --second-families: the second 25 extra families (more_families.SECOND_FAMILIES; the
    data without it checked by making the data-mf command again)."""

    batch, earlier = M.SECOND_FAMILIES, M.EXTRA_FAMILIES
    option, share = "second_families", 0.5
    before = dict(perturb=0.5, twins=0.2, more_families=0.6)
    words, batch_words = ("garage", "dishwasher", "horoscope", "password", "sunset"), M.SECOND_WORDS
    bad_tool, bad_error = "set_garage_door", "tool set_garage_door is a family's already"


class ThirdFamilies(ExtraBatchChecks, unittest.TestCase):
    """data.py --third-families: the third 25 extra families (more_families.THIRD_FAMILIES; the data
    without it checked by making the data-sf command again)."""

    batch, earlier = M.THIRD_FAMILIES, M.EXTRA_FAMILIES + M.SECOND_FAMILIES
    option, share = "third_families", 0.34
    before = dict(perturb=0.5, twins=0.2, more_families=0.6, second_families=0.5)
    words, batch_words = ("humidifier", "stopwatch", "snooze", "lottery", "wallpaper"), M.THIRD_WORDS
    bad_tool, bad_error = "hire_a_stove", "tool hire_a_stove uses the invented word 'stove'"

    def test_no_template_holds_a_held_out_fragment(self):
        # so that none of their requests is rejected for a held-out phrasing (three of the second
        # 25's screen_brightness templates are: training-data.md, "A second 25")
        for f in self.batch:
            for t in f.templates:
                self.assertIsNone(data.HELD_FRAGMENT_RE.search(t.text.lower()), (f.name, t.text))


class Grouped(unittest.TestCase):
    """data.py --group: training examples in groups that share tools and system turn."""

    def test_group_1_is_the_ungrouped_data_byte_for_byte(self):
        tmp = tempfile.mkdtemp()
        try:
            outs = []
            for extra in ([], ["--group", "1"]):
                out = os.path.join(tmp, str(len(outs)))
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    self.assertEqual(data.main(["--seed", "5", "--train", "800", "--eval", "100", "--out", out] + extra), 0)
                files = {}
                for name in sorted(os.listdir(out)):
                    with open(os.path.join(out, name), "rb") as f:
                        files[name] = f.read()
                outs.append(files)
            self.assertEqual(outs[0], outs[1])
            self.assertNotIn(b'"group"', outs[0]["train.jsonl"])
        finally:
            shutil.rmtree(tmp)

    def test_groups_share_tools_and_system_and_differ_in_requests(self):
        train = GROUPED["train"]
        self.assertEqual(len(train), N_TRAIN)
        self.assertEqual([ex["id"] for ex in train], [f"train-{i:06d}" for i in range(N_TRAIN)])
        self.assertEqual(data.check_splits(GROUPED), [])
        groups = groups_of(train)
        self.assertEqual([g[0]["group"] for g in groups], list(range(len(groups))))
        self.assertEqual(sum(len(g) for g in groups), N_TRAIN, "a group's lines are consecutive")
        sizes = [len(g) for g in groups]
        self.assertLessEqual(max(sizes), GROUP)
        self.assertGreater(sum(sizes) / len(sizes), 3.7)
        for g in groups:
            for ex in g:
                self.assertEqual(list(ex), data.KEYS + ["group"])
                self.assertIs(ex["tools"], g[0]["tools"])
                self.assertEqual(ex["system"], g[0]["system"])
            self.assertEqual(len({ex["query"] for ex in g}), len(g))
            calls = [json.dumps(ex["calls"]) for ex in g if ex["calls"]]
            self.assertEqual(len(set(calls)), len(calls))

    def test_requests_call_other_tools_while_the_set_has_unused_ones(self):
        fam = family_of_tool()
        kind = lambda name: "family" if name in fam else "invented"  # noqa: E731
        gen = data.Generator(SEED)
        shared = 0
        for _ in range(500):
            group = gen.make_group("train", GROUP)
            if group is None:
                continue
            callers = {}
            for ex in group:
                for name in {c["name"] for c in ex["calls"]}:
                    callers[name] = callers.get(name, 0) + 1
            for name, n in callers.items():
                if n > 1:
                    # A tool that two requests call: every tool of its kind in the set is called.
                    shared += 1
                    same_kind = {t["name"] for t in group[0]["tools"] if kind(t["name"]) == kind(name)}
                    self.assertLessEqual(same_kind, set(callers), [ex["query"] for ex in group])
        self.assertGreater(shared, 10)

    def test_shares_stay_those_of_the_ungrouped_split(self):
        stats = data.statistics(GROUPED)["train"]
        self.assertTrue(0.08 <= stats["share_no_call"] <= 0.12, stats["share_no_call"])
        self.assertTrue(0.035 <= stats["share_two_calls"] <= 0.065, stats["share_two_calls"])
        self.assertTrue(0.25 <= stats["share_invented_target"] <= 0.36, stats["share_invented_target"])
        self.assertTrue(0.1 <= stats["share_system"] <= 0.25, stats["share_system"])
        self.assertEqual(set(stats["tools_per_prompt"]), {"1", "2", "3", "4", "5", "6"})
        self.assertLess(stats["mean_tools"], 4.0)  # the set keeps about make()'s size (3.3)
        self.assertEqual(stats["groups"], len(groups_of(GROUPED["train"])))

    def test_every_request_fits_exactly_its_tools(self):
        fam = family_of_tool()
        for ex in GROUPED["train"]:
            offered = [fam.get(t["name"], "invented") for t in ex["tools"]]
            for call in ex["calls"]:
                self.assertIsNone(schema.validate_call(call, ex["tools"]), ex["id"])
            if not ex["calls"]:
                if ex["family"] not in ("invented", "chitchat"):
                    banned = data.excluded_families(ex["family"], True)
                    self.assertFalse(set(offered) & banned, ex["id"])
                if ex["family"] == "chitchat":
                    self.assertNotIn("web_search", offered, ex["id"])
                continue
            for call in ex["calls"]:
                f = fam.get(call["name"], "invented")
                if f != "invented":
                    # No other tool of its family, nor of a conflicting one, is offered.
                    others = [o for t, o in zip(ex["tools"], offered) if t["name"] != call["name"]]
                    self.assertFalse(set(others) & data.excluded_families(f, False), ex["id"])

    def test_holdouts_and_held_out_splits(self):
        for split in ("A", "B", "C"):
            self.assertTrue(all("group" not in ex for ex in GROUPED[split]))
        train_queries = "\n".join(ex["query"] for ex in GROUPED["train"]).lower()
        for frag in data.HELD_FRAGMENTS:
            self.assertNotIn(frag, train_queries)
        combos = {frozenset(t["name"] for t in ex["tools"]) for ex in GROUPED["train"]}
        for ex in GROUPED["A"]:
            self.assertNotIn(frozenset(t["name"] for t in ex["tools"]), combos)
        self.assertFalse({t["name"] for ex in GROUPED["train"] for t in ex["tools"]} & F.B_TOOL_NAMES)

    def test_determinism(self):
        again = data.generate(SEED, 600, 50, group=GROUP)
        self.assertEqual(json.dumps(again), json.dumps(data.generate(SEED, 600, 50, group=GROUP)))
        self.assertNotEqual(json.dumps(again["train"]), json.dumps(data.generate(SEED + 1, 600, 50, group=GROUP)["train"]))
        # A shorter split ends with a cut group; the groups before it are the same.
        short = data.generate(SEED, 40, 10, group=GROUP)["train"]
        whole = [ex for ex in short if ex["group"] < short[-1]["group"]]
        self.assertGreater(len(whole), 30)
        self.assertEqual(GROUPED["train"][:len(whole)], whole)

    def test_share_options_are_the_fields_of_shares(self):
        # generate() takes exactly Shares' fields; a misspelt option is an error, not a silent 0
        with self.assertRaises(TypeError):
            data.generate(SEED, 40, 10, group=GROUP, perturb=0.5, twin=0.3)
        self.assertEqual(data.Shares(perturb=0.8, rename=0.5, small_talk=0.4).options(),
                         "--perturb 0.8 --rename 0.5 --small-talk 0.4")
        self.assertEqual(data.Shares().options(), "--perturb 0.0")

    def test_main_refuses_a_share_without_what_it_needs(self):
        # Checked before anything is drawn or written: each message names the option and what it needs.
        cases = [(["--perturb", "0.5", "--twins", "0.2"], "--twins needs --perturb and --group (it is drawn"),
                 (["--group", "4", "--twins", "0.2"], "--twins needs --perturb and --group"),
                 (["--perturb-invented", "0.5"], "--perturb-invented needs --perturb (it is drawn"),
                 (["--perturb", "0.5", "--group", "4", "--rename-words", "0.9"],
                  "--rename-words needs --rename (it draws the renamed tools' new nouns)"),
                 (["--perturb", "0.5", "--small-talk", "1.5"], "--small-talk 1.5: must be from 0 to 1")]
        for argv, message in cases:
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
                data.main(["--out", os.path.join(tempfile.gettempdir(), "never-written")] + argv)
            self.assertIn(message, err.getvalue(), argv)
        help_text = io.StringIO()
        with contextlib.redirect_stdout(help_text), self.assertRaises(SystemExit):
            data.main(["--help"])
        self.assertIn("with --perturb and --group: share of training groups followed by", " ".join(help_text.getvalue().split()))

    def test_each_group_check_catches_its_violation(self):
        def problems_after(mutate):
            splits = {k: copy.deepcopy(v) for k, v in GROUPED.items()}
            mutate(splits["train"], splits)
            return "\n".join(data.check_groups(splits))

        first = groups_of(GROUPED["train"])[0]
        n = len(first)

        def other_tools(train, _):
            train[1]["tools"] = train[1]["tools"][::-1]
        self.assertIn("group 0: its system turn or tools differ", problems_after(other_tools))

        def out_of_order(train, _):
            train[n - 1], train[n] = train[n], train[n - 1]
        self.assertIn("groups are numbered 0, 1, 2", problems_after(out_of_order))

        def repeated(train, _):
            train[1]["query"] = train[0]["query"]
        self.assertIn("a request is repeated", problems_after(repeated))

        def same_calls(train, _):
            k = next(i for i in range(n) if train[i]["calls"])
            j = next(i for i in range(n) if i != k)
            train[j]["calls"] = copy.deepcopy(train[k]["calls"])
        self.assertIn("two requests have the same calls", problems_after(same_calls))

        def missing(train, _):
            del train[5]["group"]
        self.assertIn("train-000005: no group", problems_after(missing))

        def in_a(_, splits):
            splits["A"][0]["group"] = 0
        self.assertIn("a split-A example has a group", problems_after(in_a))
        self.assertEqual(problems_after(lambda *_: None), "")


class ValueSources(unittest.TestCase):
    """Copied values are high-entropy: curated lists, the word source and pseudo-words."""

    def test_values_rarely_repeat(self):
        splits = data.generate(SEED + 100, 10000, 10)
        stats = data.value_statistics(splits["train"])
        self.assertGreater(stats["copied"], 6000)
        self.assertLessEqual(stats["max_repeat"], 8, stats["most_repeated"])
        self.assertGreater(stats["distinct"] / stats["copied"], 0.9)
        values = [v for ex in splits["train"] for v in data.novel_values(ex)]
        # Some values hold non-ASCII letters, CJK or Cyrillic, digits; free text runs to 7 words.
        self.assertGreater(sum(not v.isascii() for v in values) / len(values), 0.03)
        self.assertTrue(any(re.search("[\u4e00-\u9fff]", v) for v in values))
        self.assertTrue(any(re.search("[\u0400-\u04ff]", v) for v in values))
        self.assertGreater(sum(bool(re.search("[0-9]", v)) for v in values) / len(values), 0.05)
        self.assertEqual(max(len(v.split()) for v in values), 7)

    def test_source_shares(self):
        # A long curated list takes 25% of draws, a shorter one proportionally less; the rest is
        # built from the word source's words (45%) or from pseudo-words (30%).
        rng = random.Random(2)
        for values in (F.PERSON, F.BY_NAME["email"].slots["subject"], I.VALUES):
            curated = 25 * values.curated_share * min(1, len(values.train) / slots.CURATED_FULL)
            n = 20000
            counts = collections.Counter(values.sample_source(rng) for _ in range(n))
            total = curated + 45 + 30
            for source, weight in zip(slots.SOURCES, (curated, 45, 30)):
                self.assertAlmostEqual(counts[source] / n, weight / total, delta=0.012, msg=source)
        self.assertLess(I.VALUES.curated_share, 1)
        # Values built from the word source are dictionary words; pseudo-words almost never are.
        words = {w.lower() for w in slots.WORD_SOURCE.common + slots.WORD_SOURCE.proper}
        for lexicon, low, high in (("words", 0.85, 1.0), ("pseudo", 0.0, 0.1)):
            found = [w.lower() in words for _ in range(2000)
                     for w in slots.person_name(rng, slots.LEXICONS[lexicon]).split()]
            self.assertTrue(low <= sum(found) / len(found) <= high, (lexicon, sum(found) / len(found)))

    def test_word_source(self):
        source = slots.WORD_SOURCE
        self.assertGreater(len(source.common), 50000)
        self.assertGreater(len(source.proper), 8000)
        self.assertTrue(all(re.fullmatch("[a-z]{3,12}", w) for w in source.common))
        self.assertTrue(all(w[0].isupper() and w[1:].islower() and w.isalpha() and 3 <= len(w) <= 12
                            for w in source.proper))
        self.assertIn("lantern", source.common)
        self.assertNotIn("murder", source.common)
        self.assertFalse(any(W.blocked(w.lower()) for w in source.common + source.proper))
        missing = W.WordSource("/nonexistent/american-english")
        with self.assertRaisesRegex(RuntimeError, "word source /nonexistent/american-english is missing: .*wamerican"):
            missing.common

    def test_a_missing_word_source_is_a_clear_error(self):
        saved = slots.WORD_SOURCE
        slots.WORD_SOURCE = W.WordSource("/nonexistent/words")
        err = io.StringIO()
        try:
            tmp = tempfile.mkdtemp()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                rc = data.main(["--seed", "1", "--train", "50", "--eval", "5", "--out", tmp])
            self.assertEqual(os.listdir(tmp), [])
            shutil.rmtree(tmp)
        finally:
            slots.WORD_SOURCE = saved
        self.assertEqual(rc, 1)
        self.assertIn("word source /nonexistent/words is missing", err.getvalue())

    def test_built_values_keep_the_rules(self):
        rng = random.Random(4)
        self.assertLessEqual({"unlock", "celsius", "whatsapp", "shuffle", "tomorrow", "forty", "minutes",
                              "usd", "spanish", "economy"}, slots.RULES.request_words)
        for lex in slots.LEXICONS.values():
            for _ in range(3000):
                w, name = lex.word(rng), lex.name(rng)
                self.assertNotIn(w, slots.RULES.request_words)
                self.assertNotIn(name.lower(), slots.RULES.request_words)
        builders = [getattr(slots, n) for n in ("person_name", "city_name", "place_name", "restaurant_name",
                    "artist_name", "song_title", "playlist_name", "genre_name", "show_name", "company_name",
                    "event_title", "short_label", "task_text", "message_text", "subject_text", "note_text",
                    "search_text", "phrase_text", "item_name", "room_name", "door_name", "device_name",
                    "colour_name", "topic_name", "news_source", "activity_name", "dish_name", "email_address",
                    "phone_number", "invented_value", "ticker")]
        for build in builders:
            for _ in range(300):
                v = build(rng, slots.LEXICONS[rng.choice(("words", "pseudo"))])
                self.assertTrue(v and v == v.strip() and '"' not in v, (build.__name__, v))
                self.assertNotRegex(v, r"[.,;:!?]$", (build.__name__, v))
                self.assertLessEqual(len(v.split()), 7, (build.__name__, v))
        for _ in range(300):
            self.assertRegex(slots.email_address(rng, slots.LEXICONS["words"]), r"^[a-z0-9._-]+@[a-z-]+\.[a-z.]+$")
            self.assertRegex(slots.ticker(rng, None), r"^[A-Z]{2,5}$")
            self.assertGreaterEqual(len(re.findall("[0-9]", slots.phone_number(rng, None))), 7)
        # A split-B word never gets into a value, not even through an accented letter ("stocké").
        self.assertFalse(slots.RULES.allows("Stocké Lane", False))
        self.assertFalse(slots.RULES.allows(sorted(F.HELD_VALUES)[0], False))
        self.assertTrue(slots.RULES.allows(sorted(F.HELD_VALUES)[0], True))

    def test_numbers_range_widely_and_few_are_converted(self):
        for split in ("train", "A"):
            share = data.statistics(SPLITS)[split]["share_numbers_converted"]
            self.assertTrue(0.08 <= share <= 0.22, (split, share))
        numbers = [v for ex in SPLITS["train"] for c in ex["calls"] for v in c["arguments"].values()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)]
        self.assertGreater(max(numbers), 10000)
        self.assertGreater(len(set(numbers)) / len(numbers), 0.3)
        self.assertGreater(sum(n > 99 for n in numbers) / len(numbers), 0.2)
        # Durations: mostly the parameter's own unit over a wide range; 15% a larger unit, small.
        rng = random.Random(6)
        converted = 0
        for _ in range(3000):
            sv = slots.Duration().sample(rng, False, 60)
            self.assertEqual(sv.value % 60, 0)
            if "hour" in sv.text:
                converted += 1
                self.assertLessEqual(sv.value, 12 * 3600, sv.text)
        self.assertAlmostEqual(converted / 3000, 0.15, delta=0.025)
        self.assertGreater(max(slots.Duration().sample(rng, False, 60).value for _ in range(3000)), 300 * 60)

    def test_times_and_dates_in_many_formats(self):
        rng = random.Random(8)
        shape = lambda text: re.sub("[0-9]+", "9", text)  # noqa: E731
        times = {shape(slots.TimeOfDay().sample(rng, False).text) for _ in range(3000)}
        self.assertGreater(len(times), 25, sorted(times))
        self.assertLessEqual({"9:9", "9:9 pm", "9.9pm", "9 pm", "9pm", "noon", "half past 9", "9h9"}, times)
        days = {shape(slots.Day().sample(rng, False).copy) for _ in range(3000)}
        self.assertGreater(len(days), 40)
        self.assertLessEqual({"tomorrow", "Friday", "next week", "9-9-9", "9/9", "9.9.9", "in 9 days"}, days)


class Conventions(unittest.TestCase):
    def test_number_words_and_json_numbers(self):
        self.assertEqual([slots.number_words(n) for n in (0, 7, 13, 20, 45, 99)],
                         ["zero", "seven", "thirteen", "twenty", "forty-five", "ninety-nine"])
        self.assertEqual([slots.json_number(t) for t in ("12.50", "3", "3.0", "0.75")], [12.5, 3, 3, 0.75])
        self.assertEqual(json.dumps(slots.json_number("12.50")), "12.5")

    def test_conversions(self):
        rng = random.Random(1)
        timer = F.BY_NAME["timer"]
        by = {v.name: v for v in timer.variants}
        two_hours = slots.SlotValue("2 hours", value=7200)
        self.assertEqual(by["set_timer"].arguments({"dur": two_hours}), {"minutes": 120})
        self.assertEqual(by["start_countdown"].arguments({"dur": two_hours}), {"duration_seconds": 7200})
        self.assertEqual(by["timer_set"].arguments({"dur": two_hours}), {"hours": 2})
        self.assertEqual(by["add_timer"].arguments({"dur": two_hours}), {"duration": "2 hours"})
        with self.assertRaises(slots.Unfillable):
            by["timer_set"].arguments({"dur": slots.SlotValue("90 minutes", value=5400)})
        lights = {v.name: v for v in F.BY_NAME["lights"].variants}
        off = slots.SlotValue("off", value=False)
        self.assertEqual(lights["set_light"].arguments({"room": slots.SlotValue("kitchen"), "power": off}),
                         {"room": "kitchen", "on": False})
        self.assertEqual(lights["smart_home.light"].arguments({"room": slots.SlotValue("den"), "power": off}),
                         {"room": "den", "power": "OFF"})
        msg = {v.name: v for v in F.BY_NAME["message"].variants}
        self.assertEqual(msg["send_chat"].arguments({"person": slots.SlotValue("Zoë"), "msg": slots.SlotValue("hi"),
                                                     "platform": slots.SlotValue("WhatsApp", value="whatsapp")}),
                         {"user": "Zoë", "msg": "hi", "app": "WHATSAPP"})
        # A request never uses a unit smaller than the parameter's: the sampler respects it.
        for _ in range(200):
            sv = slots.Duration().sample(rng, False, 60)
            self.assertEqual(sv.value % 60, 0)

    def test_tools_that_take_one_switch_value(self):
        # turn_on_lights is only ever asked to turn on, unlock_door to unlock, and so on.
        gen = data.Generator(5)
        fixed = [(f, v) for f in F.TRAIN_FAMILIES for v in f.variants if v.fixed]
        self.assertGreaterEqual(len(fixed), 5)
        for f, v in fixed:
            for held in (False, True):
                for _ in range(60):
                    c = gen.family_clause(f, held, held, variant=v.name)
                    for slot, value in v.fixed.items():
                        if slot in c.values:
                            self.assertEqual(c.values[slot].value, value, (v.name, c.values))
        for ex in SPLITS["train"] + SPLITS["A"]:
            for call in ex["calls"]:
                q = ex["query"].lower()
                if call["name"] in ("turn_on_lights", "lock_door"):
                    self.assertNotRegex(q, r"\b(off|disable|unlock)\b", ex["id"])
                if call["name"] in ("turn_off_lights", "unlock_door"):
                    self.assertNotRegex(q, r"\b(on|enable|lock)\b(?! the \w+ lights)", ex["id"])
        lights = {v.name: v for v in F.BY_NAME["lights"].variants}
        with self.assertRaises(ValueError):
            lights["turn_on_lights"].arguments({"room": slots.SlotValue("den"), "power": slots.SlotValue("off", value=False)})

    def test_render_quotes_ambiguous_free_text(self):
        rng = random.Random(1)
        t = slots.Template("remind me to {task} at {time}", "imp", "reminder", False)
        values = {"task": slots.SlotValue("meet Ana at the café", free=True), "time": slots.SlotValue("5pm")}
        for _ in range(20):
            text = slots.render(t, values, rng, quote_p=0)
            self.assertRegex(text, r'^remind me to ["\'\u201c]meet Ana at the café["\'\u201d] at 5pm$')
        values["task"] = slots.SlotValue("water the plants", free=True)
        self.assertEqual(slots.render(t, values, rng, quote_p=0), "remind me to water the plants at 5pm")
        # A value that may not be quoted and would be ambiguous makes the template unusable.
        t2 = slots.Template("play {song} by {artist}", "imp", "music_play", False)
        self.assertIsNone(slots.render(t2, {"song": slots.SlotValue("Stand by Me"),
                                            "artist": slots.SlotValue("Ben")}, rng))

    def test_invented_requests(self):
        rng = random.Random(3)
        vocab = I.Vocab(False)
        for _ in range(300):
            inv = I.invent(rng, vocab)
            tool = inv.tool()
            self.assertIsNone(schema.check_tool(tool))
            t, values, args = I.request(rng, vocab, inv, False)
            query = slots.render(t, values, rng)
            self.assertIn(f"{inv.verb} ", query)
            self.assertIn(inv.noun, query)
            self.assertIsNone(schema.validate_call({"name": tool["name"], "arguments": args}, [tool]))
            self.assertFalse({inv.verb, inv.noun} & F.FAMILY_WORDS, tool["name"])


class Render(unittest.TestCase):
    EX = {"id": "t-1", "split": "train", "family": "timer", "system": "date: 2026-11-30; locale: en-GB",
          "tools": [{"description": "Send a text.", "name": "send_message", "parameters": {
              "required": ["to"], "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
              "type": "object"}}],
          "query": "text Zoë \"on my way\"",
          "calls": [{"name": "send_message", "arguments": {"to": "Zoë", "text": "on my way"}}]}

    def test_prompt_text_exact(self):
        self.assertEqual(
            render.prompt_text(self.EX),
            "<|im_start|>system\ndate: 2026-11-30; locale: en-GB<|im_end|>\n<|im_start|>user\n<tools>"
            '[{"name":"send_message","description":"Send a text.","parameters":{"type":"object","properties":'
            '{"to":{"type":"string"},"text":{"type":"string"}},"required":["to"]}}]</tools>\n'
            'text Zo\u00eb "on my way"<|im_end|>\n<|im_start|>assistant\n')
        no_system = dict(self.EX, system="")
        self.assertTrue(render.prompt_text(no_system).startswith("<|im_start|>user\n<tools>[{"))

    def test_target_text_exact(self):
        self.assertEqual(render.target_text(self.EX),
                         '<tool_call>[{"name":"send_message","arguments":{"to":"Zo\\u00eb","text":"on my way"}}]'
                         "</tool_call><|im_end|>")
        self.assertEqual(render.target_text(dict(self.EX, calls=[])), "<tool_call>[]</tool_call><|im_end|>")

    def test_tools_json_escapes_and_orders(self):
        tools = [{"parameters": {"x-extra": 1, "required": [], "type": "object", "properties": {"a": {"type": "string"}}},
                  "description": "Caf\u00e9 \u5317\u4eac \U0001F600", "name": "n"}]
        self.assertEqual(render.tools_json(tools),
                         '[{"name":"n","description":"Caf\\u00e9 \\u5317\\u4eac \\ud83d\\ude00","parameters":'
                         '{"type":"object","properties":{"a":{"type":"string"}},"required":[],"x-extra":1}}]')

    def test_token_ids(self):
        tmp = tempfile.mkdtemp()
        try:
            for split, examples in SPLITS.items():
                data.write_split(os.path.join(tmp, f"{split}.jsonl"), examples[:3000])
            out = os.path.join(tmp, "tok")
            with contextlib.redirect_stdout(io.StringIO()):
                rc = tokenizer.main(["--data", tmp, "--vocab", "700", "--out", out, "--sample", "2500",
                                     "--stats-sample", "0"])
            self.assertEqual(rc, 0)
            self.assertEqual(sorted(os.listdir(out)), ["token_stats.json", "tokenizer.model", "tokenizer.vocab"])
            sp = tokenizer.check_layout(os.path.join(out, "tokenizer.model"), 700)
            with open(os.path.join(out, "token_stats.json")) as f:
                stats = json.load(f)
            a = SPLITS["A"]
            lengths = [render.encode_example(sp, ex) for ex in a]
            self.assertEqual(stats["splits"]["A"]["measured_tokens"], sum(len(p) + len(t) for p, t in lengths))
            self.assertEqual(tokenizer.token_counts(sp, a, batch=64),
                             ([len(p) for p, t in lengths], [len(t) for p, t in lengths]))
            for ex in (self.EX, SPLITS["A"][0], SPLITS["C"][0]):
                p, t = render.encode_example(sp, ex)
                self.assertEqual(p[0], 2)
                self.assertEqual(sp.id_to_piece(p[1]), "\u2581")
                self.assertEqual(p[2], 4)  # <|im_start|>
                self.assertEqual(sp.decode(p[1:]), render.prompt_text(ex))
                self.assertEqual(sp.id_to_piece(t[0]), "\u2581")
                self.assertEqual(t[1], 10)  # <tool_call>
                self.assertEqual(t[-3:], [11, 5, 1])  # </tool_call> <|im_end|> </s>
                self.assertEqual(sp.decode(t[:-1]), render.target_text(ex))
            # The layout check refuses a model whose pieces are not in Needle's order.
            with self.assertRaisesRegex(RuntimeError, "700 pieces, not 701"):
                tokenizer.check_layout(os.path.join(out, "tokenizer.model"), 701)
            # A model trained without the chat markers has the wrong layout.
            import sentencepiece as spm
            corpus = os.path.join(tmp, "corpus.txt")
            tokenizer.write_corpus(SPLITS["train"][:500], corpus)
            spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(tmp, "plain"), model_type="bpe",
                                           vocab_size=400, byte_fallback=True, minloglevel=2)
            with self.assertRaisesRegex(RuntimeError, "id 0 is '<unk>', not '<pad>'"):
                tokenizer.check_layout(os.path.join(tmp, "plain.model"), 400)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)
