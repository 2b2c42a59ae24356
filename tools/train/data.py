#!/usr/bin/env python3
"""Training and evaluation data for our own Needle 2 tool-calling model (docs/training-data.md).

    /usr/bin/python3 tools/train/data.py --seed 1 --train 200000 --eval 1000 --out build/train/data

writes train.jsonl, A.jsonl, B.jsonl and C.jsonl (one example a line), stats.json and
manifest.json (what is held out) into --out. Everything follows from --seed.

  train  the training set: family and invented tools, ~10% requests no tool fits, ~5% two calls
  A      seen families with held-out request templates, held-out values and new tool combinations
  B      the families held out whole (families.B_FAMILIES): tools and words never in train
  C      requests that no offered tool fits (answer [])

With --group K the training examples come in groups of up to K that share one prompt's tools and
system turn, with different requests (Generator.make_group); each line carries its group's number in
"group" and a group's lines are consecutive. A, B and C are made as without it. --group 1 (the
default) is the ungrouped data, byte for byte.

With --perturb the training split is drawn again with perturbed phrasings, and with it --twins (groups
followed by their [] twin), --perturb-invented (perturbed invented-tool frames), --rename (a
family tool's noun renamed in the tool and its requests; --rename-forms, the name in the other
number; --rename-words, the new noun a word of the word source), --invented (the share of invented
tools among the calls), --invented-nouns (invented tools asked for by their noun alone),
--small-talk (composed small talk among the [] requests), --invented-words, --more-families (and
--second-families, --third-families), --near-twins and --restyle (family tools' names in another
style): docs/training-data.md. Each is 0 by default and then draws nothing.

The splits are checked before anything is written (check_splits); a failed check is an error.
"""

import argparse
import json
import os
import random
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import families as F  # noqa: E402
import invented as I  # noqa: E402
import more_families as M  # noqa: E402
import smalltalk  # noqa: E402
import wordlists as W  # noqa: E402
from schema import check_tool, validate_call  # noqa: E402
from slots import (LEXICONS, SOURCE_WEIGHTS, SOURCES, Template, Unfillable, any_lexicon,  # noqa: E402
                   json_number, number_words, perturb_template, pick, render, weighted)

SPLITS = ("train", "A", "B", "C")

# Polite openings an imperative request may take; the ones that make it a question may end in "?".
PREFIXES = ["please ", "hey, ", "can you ", "could you ", "I'd like you to ", "ok, ", "hi, please ",
            "would you ", "I need you to ", "quick favour: ", "hey assistant, ", "right, "]
QUESTION_PREFIXES = {"can you ", "could you ", "would you "}
# How two clauses are joined in a two-call request.
JOINERS = [" and ", ", and ", ", then ", " and then ", ". Also, ", " and also ", "; "]
TOOL_COUNT_WEIGHTS = (14, 20, 22, 20, 14, 10)  # prompts with 1..6 tools
SYSTEM_P = 0.15
LOCALES = ["en-GB", "en-US", "de-DE", "fr-FR", "es-ES", "ja-JP", "pt-BR", "sv-SE", "en-IN", "nl-NL",
           "it-IT", "pl-PL"]
TIMEZONES = ["Europe/Berlin", "Europe/London", "America/New_York", "Asia/Tokyo", "Australia/Sydney",
             "America/Sao_Paulo", "Africa/Lagos", "Asia/Kolkata", "Europe/Madrid", "America/Chicago"]

CHITCHAT_TRAIN, CHITCHAT_HELD = W.split_values(W.CHITCHAT)


class Clause:
    """One request clause and the call it asks for (or would ask for, when its tool is not offered)."""

    __slots__ = ("family", "tool", "key", "template", "values", "call", "inv")

    def __init__(self, family, tool, key, template, values, call, inv=None):
        self.family, self.tool, self.key, self.template = family, tool, key, template
        self.values, self.call, self.inv = values, call, inv


class Spec:
    """What a split draws from."""

    def __init__(self, name, held_templates, held_values, invented_held, distractor_families):
        self.name = name
        self.held_templates = held_templates
        self.held_values = held_values
        self.invented_held = invented_held
        self.distractor_families = distractor_families


SPECS = {
    "train": Spec("train", False, False, False, F.TRAIN_FAMILIES),
    "A": Spec("A", True, True, True, F.TRAIN_FAMILIES),
    "B": Spec("B", False, False, False, F.TRAIN_FAMILIES + F.B_FAMILIES),
    "C": Spec("C", True, True, True, F.TRAIN_FAMILIES + F.B_FAMILIES),
}


# The families of every split and of every batch of extra ones: their names, relations and tools.
EVERY_FAMILY = F.FAMILIES + M.every_extra()


def _excluded(name, none):
    out = {name}
    fam = F.BY_NAME.get(name)
    if fam is not None:
        out |= fam.conflicts
        if none:
            out |= fam.near
    out |= {f.name for f in EVERY_FAMILY if name in f.conflicts}
    return frozenset(out)


_EXCLUDED = {(name, none): _excluded(name, none)
             for name in [f.name for f in EVERY_FAMILY] + ["invented", "chitchat"]
             for none in (False, True)}


def excluded_families(name, none):
    """Families whose tools may not be offered with a request of family `name`: the family itself
    and its conflicts; for a request that no tool may fit, its near families too."""
    return _EXCLUDED[name, none]


# --- held-out templates ----------------------------------------------------------------------------

def held_templates():
    return [t for f in F.TRAIN_FAMILIES for t in f.held_templates] + \
        I.REQUEST_TEMPLATES[True, True] + I.REQUEST_TEMPLATES[True, False]


def train_template_texts():
    texts = [t.text for f in F.FAMILIES for t in f.templates]
    texts += [t.text for key, ts in I.REQUEST_TEMPLATES.items() if not key[0] for t in ts]
    return [t.lower() for t in texts + PREFIXES + JOINERS + CHITCHAT_TRAIN]


def held_fragments():
    """The key fragment of every held-out template. Each must be distinctive: at least 8 characters
    and found in no training template, prefix or joiner (otherwise the holdout could not be checked
    on the text of the requests)."""
    train_texts = train_template_texts()
    out = []
    for t in held_templates():
        frag = t.key_fragment()
        if len(frag) < 8:
            raise ValueError(f"held-out template {t.text!r}: key fragment {frag!r} is too short")
        clash = next((x for x in train_texts if frag in x), None)
        if clash:
            raise ValueError(f"held-out template {t.text!r}: key fragment {frag!r} is in training text {clash!r}")
        out.append(frag)
    return out


def trie_regex(strings):
    """A regex matching any of `strings`, written as a trie of their common prefixes: Python's
    re tries the branches of a plain alternation one by one at every position, which is slow."""
    trie = {}
    for s in strings:
        node = trie
        for ch in s:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node):
        if list(node) == [""]:
            return ""
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # A string may end here (""), or go on: the shortest match is enough to find one.
        return "" if "" in node else body

    return re.compile(pattern(trie))


HELD_FRAGMENTS = held_fragments()
HELD_FRAGMENT_RE = trie_regex(set(HELD_FRAGMENTS))

# tool name -> its family's Variant
VARIANTS = {v.name: v for f in EVERY_FAMILY for v in f.variants}
MAX_TOOLS = 6  # tools per prompt


# --- groups: several requests against one tool set (--group) ---------------------------------------

class NearMiss:
    """The origin of a family tool renamed for a [] twin (Generator.near_miss): of no family, so that
    ToolSet.fits_nothing and may_add do not read it as one, and its name its key."""

    def __init__(self, name):
        self.name = name


class ToolSet:
    """The shared prompt of a group (data.py --group): its system turn and tools, where each tool came
    from (a family's Variant or an InventedTool), which tools the group's requests already call, and
    every clause so far with whether it is a [] request (the rules a tool added later must keep)."""

    def __init__(self, spec, example, clauses, origins):
        self.spec = spec
        self.system = example["system"]
        self.tools = list(example["tools"])
        self.origins = {t["name"]: origins[t["name"]] for t in self.tools}
        self.used = {c["name"] for c in example["calls"]}
        self.clauses = list(clauses)

    def kind_of(self, tool):
        return "invented" if isinstance(self.origins[tool["name"]], I.InventedTool) else "family"

    def families(self):
        return {o.family.name for o in self.origins.values() if isinstance(o, F.Variant)}

    def keys(self):
        return {o.key if isinstance(o, I.InventedTool) else o.name for o in self.origins.values()}

    def fits_nothing(self, clause):
        """Whether no tool of the set fits `clause` as a [] request: none of its family's, a
        conflicting or a near family's (excluded_families), nor an invented tool of its key."""
        banned = excluded_families(clause.family, True)
        return not (self.families() & banned) and clause.key not in self.keys()

    def may_add(self, origin):
        """Whether a tool of `origin` may join the set: one tool per family, no family that conflicts
        with one in the set or is excluded by a clause of the group (for a [] request its near
        families too), no invented tool whose verb and noun a request of the group already names."""
        if isinstance(origin, I.InventedTool):
            return origin.key not in self.keys() and all(origin.key != c.key for c, _ in self.clauses)
        name = origin.family.name
        return (name not in self.families()
                and not any(name in excluded_families(f, False) for f in self.families())
                and not any(name in excluded_families(c.family, none) for c, none in self.clauses))

    def add(self, tool, origin, position):
        self.tools.insert(position, tool)
        self.origins[tool["name"]] = origin


# --- the generator -------------------------------------------------------------------------------

_PERTURBED = "it is drawn with the perturbed training split"


def option(name):
    """The command-line option of a main() argument named `name` (rename_words -> --rename-words)."""
    return "--" + name.replace("_", "-")


def _share(help, needs=(), why=None):
    """A field of Shares: 0 by default; its --help text; `needs`, the other main() options it needs
    (given when not at their default: --perturb above 0, --group above 1), and why it needs them."""
    if needs:
        help = f"with {' and '.join(map(option, needs))}: {help}"
    return field(default=0.0, metadata={"help": help, "needs": needs, "why": why})


@dataclass(frozen=True)
class Shares:
    """The share options of the training split drawn again (main's --perturb ... --small-talk, each
    a field in manifest.json's order), each from 0 to 1; 0 draws nothing (Generator.chance)."""
    perturb: float = _share(
        "share of training family requests whose template words are perturbed (slots.perturb_template; "
        "docs/training-data.md, \"Perturbed phrasings\"; default 0: none)")
    twins: float = _share(
        "share of training groups followed by their [] twin, the same requests against tools none of them "
        "fits (Generator.twin_group; docs/training-data.md, \"[] twins\"; default 0: none)",
        ("perturb", "group"), _PERTURBED)
    perturb_invented: float = _share(
        "share of training requests for invented tools whose frame is perturbed (perturb_frame; "
        "docs/training-data.md, \"Perturbed frames\"; default 0: none)",
        ("perturb",), _PERTURBED)
    rename: float = _share(
        "share of training groups in which a noun that a called family tool's name shares with its requests "
        "is renamed to a new word, in the tool and the requests (Generator.rename_group; "
        "docs/training-data.md, \"Renamed nouns\"; default 0: none)",
        ("perturb", "group"), _PERTURBED)
    rename_forms: float = _share(
        "share of the renamed groups whose tool name takes the new word in the other number (set_lanterns "
        "for \"a lantern\"; docs/training-data.md, \"Renamed nouns\"; default 0: none)",
        ("rename",), "it varies the renamed tools' names")
    rename_words: float = _share(
        "share of the renamed groups whose new noun is a word of the word source (Debian's wamerican) "
        "instead of the invented tools' nouns or a pseudo-word (Generator.rename_noun; "
        "docs/training-data.md, \"Renamed nouns\"; default 0: none)",
        ("rename",), "it draws the renamed tools' new nouns")
    invented: float = _share(
        "share of the training split's call clauses drawn from invented tools, the rest from the families "
        "(Generator.draw_shape; docs/training-data.md, \"More invented tools\"; default 0: 33%%)",
        ("perturb",), _PERTURBED)
    invented_nouns: float = _share(
        "share of training requests for invented tools that name the tool's noun and not its verb "
        "(invented.noun_request; docs/training-data.md, \"More invented tools\"; default 0: none)",
        ("perturb",), _PERTURBED)
    invented_words: float = _share(
        "share of the training split's invented tools (targets and distractors) whose verb and noun are "
        "words of the word source (Debian's wamerican) instead of the invented tools' 285 training words "
        "or pseudo-words (Generator.invent; docs/training-data.md, \"Open tool words\"; default 0: none)",
        ("perturb",), _PERTURBED)
    small_talk: float = _share(
        "share of the training split's [] requests that are small talk, three in four composed "
        "(smalltalk.compose; docs/training-data.md, \"Composed small talk\"; default 0: 15%% of them, "
        "from a fixed list)",
        ("perturb",), _PERTURBED)
    more_families: float = _share(
        "share of the training split's family requests drawn from the 25 extra families of more_families.py, "
        "whose tools then also fill its prompts beside the 26 families' (Generator.pick_clause, distractor_pool; "
        "docs/training-data.md, \"More families\"; default 0: none)",
        ("perturb",), _PERTURBED)
    second_families: float = _share(
        "share of the extra-family requests (--more-families) drawn from the second 25 extra families of "
        "more_families.py (SECOND_FAMILIES), whose tools then also fill its prompts (Generator.pick_clause, "
        "distractor_pool; docs/training-data.md, \"A second 25\"; default 0: the first 25 only)",
        ("more_families",), "it divides the extra-family requests")
    third_families: float = _share(
        "share of the extra-family requests (--more-families) drawn from the third 25 extra families of "
        "more_families.py (THIRD_FAMILIES), the rest divided by --second-families, whose tools then also fill "
        "its prompts (Generator.pick_clause, distractor_pool; docs/training-data.md, \"A third 25\"; "
        "default 0: none)",
        ("more_families",), "it divides the extra-family requests")
    near_twins: float = _share(
        "share of the [] twins in which each tool that a request calls is replaced by its near miss instead of "
        "dropped: a family tool with the noun its requests name renamed, an invented tool with another noun "
        "(Generator.near_miss; docs/training-data.md, \"Near-miss twins\"; default 0: dropped)",
        ("twins",), "it changes the [] twins")
    restyle: float = _share(
        "share of the training split's family tools (called ones and distractors, in groups and their [] "
        "twins) whose name is written in another style: the same words, another case, order or prefix "
        "(set_timer -> setTimer, timer.set, api_setTimer; Generator.restyle_tools; docs/training-data.md, "
        "\"Restyled names\"; default 0: none)",
        ("perturb", "group"), _PERTURBED)
    verb_misses: float = _share(
        "share of the near misses of invented tools (--near-twins) that keep the noun and take another verb "
        "(\"stack the aquarium\" against aquarium.unwrap) instead of another noun, where every request calling "
        "the tool names its verb (Generator.verb_miss; docs/training-data.md, \"Near misses by verb\"; "
        "default 0: the noun changes)",
        ("near_twins",), "it changes the near misses")

    def options(self):
        """The command-line spelling of the shares that are not 0 (perturb always), for the log."""
        return " ".join(f"{option(f.name)} {getattr(self, f.name)}" for f in fields(self)
                        if getattr(self, f.name) or f.name == "perturb")


class Generator:
    """Makes examples; all randomness comes from one random.Random(seed)."""

    def __init__(self, seed, shares=None):
        self.rng = random.Random(seed)
        self.vocab = {False: I.Vocab(False), True: I.Vocab(True)}
        # The share options (Shares); the default, all 0, draws nothing from the generator.
        self.shares = shares = shares or Shares()
        # The [] requests' kinds (family, invented, chitchat) are drawn with these weights: with
        # small_talk that share of them small talk, else the fixed list's 15%.
        self.none_weights = (60, 25, 15) if not shares.small_talk else \
            ((1 - shares.small_talk) * 60 / 85, (1 - shares.small_talk) * 25 / 85, shares.small_talk)
        # A training call clause is invented or a family's with these weights: with invented that
        # share of them invented, else a third.
        self.call_weights = (33, 67) if not shares.invented else (shares.invented, 1 - shares.invented)
        self.split_now = None  # the split make() / make_group() is drawing for
        self.by_noun = {}  # a request that names an invented tool by its noun alone -> the noun
        self.near_missed = 0  # called tools replaced by their near miss in [] twins (near_miss), for the log
        self.verb_missed = 0  # of them, invented tools with another verb (verb_miss), for the log
        # The batches of extra families in use, each (families, words): the first 25 with
        # more_families, the second (third) 25 with second_families (third_families) as well. The
        # training split's tools come from the 26 families and these alike (distractor_pool), its
        # requests from them with more_families' share (pick_clause), and no renamed noun is one of
        # their words (may_rename_to).
        self.extra_batches = [(fams, words) for share, fams, words in (
            (shares.more_families, M.EXTRA_FAMILIES, M.EXTRA_WORDS),
            (shares.second_families, M.SECOND_FAMILIES, M.SECOND_WORDS),
            (shares.third_families, M.THIRD_FAMILIES, M.THIRD_WORDS)) if share]
        self.train_pool = F.TRAIN_FAMILIES + [f for fams, _ in self.extra_batches for f in fams]

    def distractor_pool(self, spec):
        """The families whose tools may fill `spec`'s prompts: the split's own, and in the training
        split with --more-families the extra families too (more_families.py; the second 25 with
        --second-families, the third with --third-families)."""
        if spec.name == "train" and self.shares.more_families:
            return self.train_pool
        return spec.distractor_families

    def chance(self, share):
        """True with probability `share`; a share of 0 draws nothing from the generator, so that the
        data made without an option is the data made before the option existed, byte for byte."""
        return bool(share) and self.rng.random() < share

    # clauses

    def family_clause(self, fam, held_templates, held_values, variant=None):
        rng = self.rng
        for _ in range(100):
            v = pick(rng, fam.variants) if variant is None else \
                next(x for x in fam.variants if x.name == variant)
            templates = fam.fitting[v.name, held_templates]
            if not templates:
                continue
            t = pick(rng, templates)
            if self.split_now == "train" and self.chance(self.shares.perturb):
                t = perturb_template(rng, t, any_lexicon(rng))
            try:
                values = fam.sample_values(rng, v, t, held_values)
                args = v.arguments(values)
            except Unfillable:
                continue
            return Clause(fam.name, v.tool(rng), v.name, t, values, {"name": v.name, "arguments": args})
        raise RuntimeError(f"family {fam.name}: no clause after 100 tries")

    def invented_clause(self, held):
        vocab = self.vocab[held]
        inv = self.invent(vocab)
        t, values, args = self.invented_request(vocab, inv, held)
        return Clause("invented", inv.tool(), inv.key, t, values, {"name": inv.name, "arguments": args}, inv)

    def invent(self, vocab, verb=None, noun=None):
        """invented.invent, except that in the training split, with the share invented_words, the verb
        and noun not given are words of the word source (open_tool_word): so many that no word can be
        learned as a tool's, and the model must match the request's words to the names it is offered."""
        if not vocab.held and self.chance(self.shares.invented_words):
            verb = verb or self.open_tool_word()
            noun = noun or self.open_tool_word()
        return I.invent(self.rng, vocab, verb=verb, noun=noun)

    def open_tool_word(self):
        """A word of the word source that may name an invented or renamed tool: what may_rename_to
        allows (no family's word, split B's included, no word held out for split A, in either number)."""
        for _ in range(100):
            word = LEXICONS["words"].word(self.rng, plain=True)
            if self.may_rename_to(word):
                return word
        raise RuntimeError("the word source gave no usable tool word in 100 draws")

    def invented_request(self, vocab, inv, held):
        """invented.request's (template, values, arguments), the frame perturbed with the share
        --perturb-invented in the training split."""
        t, values, args = I.request(self.rng, vocab, inv, held)
        if self.split_now == "train" and self.chance(self.shares.invented_nouns):
            t, values = I.noun_request(self.rng, inv, t, values)
        if self.split_now == "train" and self.chance(self.shares.perturb_invented):
            t = perturb_frame(self.rng, t)
        return t, values, args

    def chitchat_clause(self, held):
        if self.shares.small_talk and self.split_now == "train" and self.rng.random() < smalltalk.COMPOSED:
            text = smalltalk.compose(self.rng)
        else:
            text = pick(self.rng, CHITCHAT_HELD if held else CHITCHAT_TRAIN)
        return Clause("chitchat", None, ("chitchat",), Template(text, "other", "chitchat", held), {}, None)

    # text

    def capitalise(self, text, template, prefix):
        first = template.parts[0] if template.parts else ""
        copied_first = (not prefix and isinstance(first, tuple)
                        and isinstance(self._first_value(template), str))
        if not copied_first and self.rng.random() < 0.6:
            return text[:1].upper() + text[1:]
        return text

    def _first_value(self, template):
        return self._values[template.parts[0][0]].value

    def single_text(self, clause):
        rng = self.rng
        t = clause.template
        prefix = suffix = ""
        if t.kind == "imp":
            if rng.random() < 0.3:
                prefix = pick(rng, PREFIXES)
            r = rng.random()
            if prefix in QUESTION_PREFIXES and r < 0.6:
                suffix = "?"
            elif r < 0.15:
                suffix = "."
            elif r < 0.22 and "please" not in prefix:
                suffix = " please"
            elif r < 0.25:
                suffix = "!"
            elif r < 0.3:
                suffix = ", thanks"
        text = render(t, clause.values, rng, prefix, suffix)
        if text is None:
            return None
        self._values = clause.values
        text = self.capitalise(text, t, prefix)
        if getattr(t, "noun", None):
            self.by_noun[text] = t.noun
        return text

    def two_text(self, first, second):
        rng = self.rng
        joiner = pick(rng, JOINERS)
        end = pick(rng, ("", "", ".", "!")) if joiner != "; " else ""
        a = render(first.template, first.values, rng, "", joiner, force_quote=True)
        b = render(second.template, second.values, rng, "", end, force_quote=True)
        if a is None or b is None:
            return None
        self._values = first.values
        return self.capitalise(a, first.template, "") + b

    def system(self):
        rng = self.rng
        date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        return pick(rng, [
            f"date: {date}; locale: {pick(rng, LOCALES)}",
            f"date: {date}; timezone: {pick(rng, TIMEZONES)}",
            f"locale: {pick(rng, LOCALES)}",
            f"timezone: {pick(rng, TIMEZONES)}",
            "You are a helpful assistant.",
            "You are a helpful assistant that calls tools.",
            f"date: {date}",
        ])

    # tools

    def tools_for(self, spec, clauses, offered, none):
        """The prompt's tools: the `offered` clauses' tools plus distractors that fit none of the
        clauses, 1 to 6 in all, in random order."""
        rng = self.rng
        k = weighted(rng, (1, 2, 3, 4, 5, 6), TOOL_COUNT_WEIGHTS)
        tools, names, keys, fams = [], set(), set(), set()
        self.origins = {}  # tool name -> its Variant or InventedTool (make_group draws requests for it)
        for c in clauses:
            keys.add(c.key)
        for c in offered:
            if c.tool["name"] not in names:
                tools.append(c.tool)
                names.add(c.tool["name"])
                fams.add(c.family)
                self.origins[c.tool["name"]] = c.inv if c.inv is not None else VARIANTS[c.key]
        k = max(k, len(tools))
        banned = set()
        for c in clauses:
            banned |= excluded_families(c.family, none)
        pool = self.distractor_pool(spec)
        near = [n for c in clauses if c.family in F.BY_NAME for n in sorted(F.BY_NAME[c.family].near)
                if n not in banned and F.BY_NAME.get(n) in pool]
        invented = [c.inv for c in clauses if c.inv is not None]
        vocab = self.vocab[spec.invented_held]
        tries = 0
        while len(tools) < k and tries < 60:
            tries += 1
            r = rng.random()
            if invented and r < 0.25:
                # A near miss: another tool with the same verb or the same noun.
                base = pick(rng, invented)
                inv = self.invent(vocab, verb=base.verb) if rng.random() < 0.5 else self.invent(vocab, noun=base.noun)
                tool, key, fam, origin = inv.tool(), inv.key, "invented", inv
            elif r < 0.55:
                inv = self.invent(vocab)
                tool, key, fam, origin = inv.tool(), inv.key, "invented", inv
            else:
                g = F.BY_NAME[pick(rng, near)] if near and rng.random() < 0.3 else pick(rng, pool)
                if g.name in banned or g.name in fams or any(g.name in F.BY_NAME[f].conflicts for f in fams if f in F.BY_NAME):
                    continue
                v = pick(rng, g.variants)
                tool, key, fam, origin = v.tool(rng), v.name, g.name, v
            if tool["name"] in names or key in keys:
                continue
            tools.append(tool)
            self.origins[tool["name"]] = origin
            names.add(tool["name"])
            keys.add(key)
            if fam != "invented":
                fams.add(fam)
        rng.shuffle(tools)
        return tools

    # examples

    def pick_clause(self, spec, kind):
        """A clause of `kind` ("family", "invented", "chitchat", "B") for split `spec`."""
        rng = self.rng
        if kind == "invented":
            return self.invented_clause(spec.invented_held)
        if kind == "chitchat":
            return self.chitchat_clause(spec.held_templates)
        if kind == "B":
            return self.family_clause(pick(rng, F.B_FAMILIES), False, False)
        if self.split_now == "train" and self.chance(self.shares.more_families):
            if self.chance(self.shares.third_families):
                extra = M.THIRD_FAMILIES
            elif self.chance(self.shares.second_families):
                extra = M.SECOND_FAMILIES
            else:
                extra = M.EXTRA_FAMILIES
            return self.family_clause(pick(rng, extra), False, False)
        return self.family_clause(pick(rng, F.TRAIN_FAMILIES), spec.held_templates, spec.held_values)

    def draw_shape(self, split):
        """A request's shape ("one", "two" calls or "none") and the clause kinds it draws from, with
        their weights: the split's shares (docs/training-data.md)."""
        r = self.rng.random()
        if split == "train":
            shape = "two" if r < 0.05 else "none" if r < 0.15 else "one"
            kinds = ("invented", "family") if shape != "none" else ("family", "invented", "chitchat")
            weights = self.call_weights if shape != "none" else self.none_weights
        elif split == "A":
            shape = "two" if r < 0.08 else "one"
            kinds, weights = ("invented", "family"), (20, 80)
        elif split == "B":
            shape = "two" if r < 0.08 else "one"
            kinds, weights = ("B",), (1,)
        else:
            shape = "none"
            kinds, weights = ("family", "B", "invented", "chitchat"), (35, 25, 20, 20)
        return shape, kinds, weights

    def make(self, split):
        """One example for `split`, or None (the caller tries again)."""
        rng = self.rng
        spec = SPECS[split]
        self.split_now = split
        shape, kinds, weights = self.draw_shape(split)
        first = self.pick_clause(spec, weighted(rng, kinds, weights))
        if shape == "two":
            # Both clauses of a two-call request are imperative (questions do not join).
            for _ in range(20):
                if first.template.kind == "imp":
                    break
                first = self.pick_clause(spec, weighted(rng, kinds, weights))
            if rng.random() < 0.25 and first.family in F.BY_NAME:
                # The same tool twice: the same family and variant, other values.
                fam = F.BY_NAME[first.family]
                in_train = fam.split == "train"
                second = self.family_clause(fam, spec.held_templates and in_train,
                                            spec.held_values and in_train, variant=first.key)
                if second.call == first.call:
                    return None
                second.tool = first.tool
            else:
                for _ in range(20):
                    second = self.pick_clause(spec, weighted(rng, kinds, weights))
                    if second.template.kind == "imp" and second.family != first.family \
                            and second.family not in excluded_families(first.family, False):
                        break
                else:
                    return None
            if first.template.kind != "imp" or second.template.kind != "imp":
                return None
            query = self.two_text(first, second)
            clauses = [first, second]
            calls = [first.call, second.call]
            family = f"{first.family}+{second.family}"
            offered = clauses
        else:
            query = self.single_text(first)
            clauses = [first]
            if shape == "none":
                calls, offered = [], []
            else:
                calls, offered = [first.call], [first]
            family = first.family
        if query is None:
            return None
        tools = self.tools_for(spec, clauses, offered, shape == "none")
        if not tools:
            return None
        system = self.system() if rng.random() < SYSTEM_P else ""
        self.last_clauses = [(c, shape == "none") for c in clauses]
        return {"id": "", "split": split, "family": family, "system": system, "tools": tools,
                "query": query, "calls": calls}


    # groups (data.py --group)

    def make_group(self, split, size):
        """Up to `size` training examples that share one prompt's system turn and tools (the same
        objects, in the same order), or None. The first is make()'s example. Every further one draws
        its shape and clause kinds as make() does, so the split's shares of [] requests, two-call
        requests and invented tools stay; a request that calls a tool calls one of the set that no
        earlier request of the group calls when there is one (clause_for_set: the set keeps about the
        size make() drew); a [] request is one that no tool of the set fits. A draw that cannot be
        placed is dropped, as is one that repeats a request or the calls of another, so a group may be
        smaller than `size`. The order is shuffled."""
        if split != "train":
            raise ValueError(f"make_group: groups are made for the training split only, not {split!r}")
        first = self.make(split)
        if first is None:
            return None
        group = ToolSet(SPECS[split], first, self.last_clauses, self.origins)
        self.last_group = group  # twin_group's input
        members = [first]
        for _ in range(size - 1):
            made = self.group_member(group)
            if made is None:
                continue
            ex, clauses = made
            if all(ex["query"] != m["query"] and (not ex["calls"] or ex["calls"] != m["calls"]) for m in members):
                members.append(ex)
                group.used.update(c["name"] for c in ex["calls"])
                group.clauses += [(c, not ex["calls"]) for c in clauses]
        for ex in members:
            ex["tools"] = group.tools
        self.rng.shuffle(members)
        return members

    def group_member(self, group):
        """One more request against `group`'s tools (make_group): (example, its clauses), or None."""
        rng, spec = self.rng, group.spec
        shape, kinds, weights = self.draw_shape(spec.name)
        if shape == "none":
            for _ in range(20):
                clause = self.pick_clause(spec, weighted(rng, kinds, weights))
                if group.fits_nothing(clause):
                    break
            else:
                return None
            clauses, calls, query = [clause], [], self.single_text(clause)
        elif shape == "one":
            clause = self.clause_for_set(group, weighted(rng, kinds, weights))
            if clause is None:
                return None
            clauses, calls, query = [clause], [clause.call], self.single_text(clause)
        else:
            # Two imperative clauses: the same tool twice (a quarter of family requests), or tools of
            # two families (a family and an invented tool, or two families), as make() draws them.
            first = self.clause_for_set(group, weighted(rng, kinds, weights), imperative=True)
            if first is None:
                return None
            if rng.random() < 0.25 and first.family in F.BY_NAME:
                second = self.family_clause(F.BY_NAME[first.family], spec.held_templates, spec.held_values,
                                            variant=first.key)
                if second.call == first.call or second.template.kind != "imp":
                    return None
                second.tool = first.tool
            else:
                for _ in range(20):
                    kind = weighted(rng, kinds, weights)
                    if kind != first.family:
                        break
                else:
                    return None
                second = self.clause_for_set(group, kind, imperative=True, besides=first.tool["name"])
                if second is None:
                    return None
            clauses, calls = [first, second], [first.call, second.call]
            query = self.two_text(first, second)
        if query is None:
            return None
        return {"id": "", "split": spec.name, "family": "+".join(c.family for c in clauses),
                "system": group.system, "tools": group.tools, "query": query, "calls": calls}, clauses

    def twin_group(self, members):
        """The [] twin of the group make_group just made (`members`): the same system turn and
        requests against the set's tools less every tool a request calls, refilled to the same size
        with new distractors that fit none of the requests (ToolSet.may_add with every clause as a []
        request: no tool of a request's family, a conflicting or a near one, no invented tool of its
        verb and noun), so that every answer is []. The pair shows that the tools offered, not the
        request alone, decide whether a request gets a call (docs/training-data.md, "[] twins").
        None when no request calls a tool, a kept tool fits a request, or no tool is left."""
        group = self.last_group
        if not group.used:
            return None
        kept = [t for t in group.tools if t["name"] not in group.used]
        twin = ToolSet(group.spec, {"system": group.system, "tools": kept, "calls": []},
                       [(c, True) for c, _ in group.clauses], group.origins)
        if not all(twin.fits_nothing(c) for c, _ in group.clauses):
            return None
        near = self.chance(self.shares.near_twins)
        for index, tool in enumerate(group.tools):
            if tool["name"] not in group.used:
                continue
            missed = self.near_miss(group, tool, members, twin) if near else None
            if missed is not None:
                twin.add(missed[0], missed[1], min(index, len(twin.tools)))
                self.near_missed += 1
            else:
                self.add_to_set(twin, weighted(self.rng, ("invented", "family"), (33, 67)))
        if not twin.tools:
            return None
        return [dict(ex, tools=twin.tools, calls=[]) for ex in members]

    def near_miss(self, group, tool, members, twin):
        """A near miss of `tool`, a tool of `group` that requests of `members` call, for their [] twin
        (`twin`, the set being refilled): (tool definition, origin), or None. A family tool whose
        name holds a noun that every request calling it names gets that noun renamed (rename_noun),
        in its name and descriptions: "set a pasta timer" against set_lantern, "Start a lantern". An
        invented tool keeps its verb, description frame and parameters and takes another noun
        ("polish the kettle" against polish_ladle). Either way the request's kind is offered and only
        the noun says that it does not fit (docs/training-data.md, "Near-miss twins")."""
        rng, origin = self.rng, group.origins[tool["name"]]
        callers = [ex for ex in members if any(c["name"] == tool["name"] for c in ex["calls"])]
        seen = " ".join([ex["query"] for ex in members]
                        + [w for t in twin.tools + group.tools for w in F.name_words(t["name"])]).lower()
        names = {t["name"] for t in twin.tools + group.tools}
        if isinstance(origin, I.InventedTool):
            if self.chance(self.shares.verb_misses):
                return self.verb_miss(group, tool, origin, callers, twin, seen, names)
            if not all(either_number(origin.noun).search(ex["query"].lower()) for ex in callers):
                return None
            new = self.invent(self.vocab[group.spec.invented_held], verb=origin.verb).noun
            if new == origin.noun or either_number(new).search(seen):
                return None
            name = swap_word(tool["name"], origin.noun, new)
            if name == tool["name"] or name in names:  # an opaque name (tool_g8y) has no noun to change
                return None
            description = re.sub(r"\b" + re.escape(origin.noun) + r"\b", new, tool["description"])
            missed = I.InventedTool(origin.verb, new, name, description, origin.params)
            return (missed.tool(), missed) if twin.may_add(missed) else None
        nouns = sorted({_RENAME_FORMS[w][0] for w in F.name_words(tool["name"]) if w in _RENAME_FORMS})
        nouns = [n for n in nouns if all(noun_pattern(n).search(ex["query"]) for ex in callers)]
        if not nouns:
            return None
        new = self.rename_noun()
        if either_number(new).search(seen):
            return None
        missed = renamed_tool(tool, pick(rng, nouns), new)
        # a description that does not name the noun ("Adjust the heating." for setTemperature) would
        # still fit the request
        if missed["name"] in names or missed["description"] == tool["description"]:
            return None
        return missed, NearMiss(missed["name"])

    def verb_miss(self, group, tool, origin, callers, twin, seen, names):
        """The near miss by verb of an invented `tool` of `group` (near_miss with the share verb_misses,
        which passes the requests calling it, the words and names of the prompt): its noun,
        description frame and parameters with another verb, in its name and description ("stack the
        aquarium" against aquarium.unwrap, "Unwraps the given aquarium."), or None when a request
        calling it does not name its verb (a noun request: "the aquarium?"), the new verb is in the
        prompt already or the name holds no verb (tool_g8y)."""
        verbs = verb_pattern(origin.verb)
        if not all(verbs.search(ex["query"]) for ex in callers):
            return None
        new = self.invent(self.vocab[group.spec.invented_held], noun=origin.noun).verb
        if new == origin.noun or verb_pattern(new).search(seen):
            return None
        name = swap_word(tool["name"], origin.verb, new)
        if name == tool["name"] or name in names:
            return None
        description = verbs.sub(lambda m: styled(I.third_person(new) if m.group(0).lower() != origin.verb
                                                 else new, m.group(0)), tool["description"])
        missed = I.InventedTool(new, origin.noun, name, description, origin.params)
        if not twin.may_add(missed):
            return None
        self.verb_missed += 1
        return missed.tool(), missed

    def rename_group(self, members):
        """Renames, in the group make_group just made (`members`), a noun that a called family tool's
        name shares with every request that calls it: a new noun of the invented tools' training
        vocabulary takes its place in the tool's name and descriptions and in those requests
        ("set a pasta timer for an hour" with set_timer -> "set a pasta lantern for an hour" with
        set_lantern; a pseudo-word three times in ten). The request's kind and slots stay, its key
        word is one the model has not tied to a family, so only reading the tools connects them
        (docs/training-data.md, "Renamed nouns"). The group's set (ToolSet: tools, used names, origins) follows, so a twin drawn
        after it drops the renamed tool. False when no called family tool has such a noun (or the
        noun is in an argument, or the new word is already in the prompt)."""
        rng, group = self.rng, self.last_group
        arguments = string_arguments(members)
        choices = []
        for index, tool in enumerate(group.tools):
            if group.kind_of(tool) != "family" or tool["name"] not in group.used:
                continue
            callers = [ex for ex in members if any(c["name"] == tool["name"] for c in ex["calls"])]
            nouns = sorted({_RENAME_FORMS[w][0] for w in F.name_words(tool["name"]) if w in _RENAME_FORMS})
            for singular in nouns:
                pattern = noun_pattern(singular)
                if all(pattern.search(ex["query"]) for ex in callers) and \
                        not any(pattern.search(v) for v in arguments):
                    choices.append((index, tool, callers, singular))
        if not choices:
            return False
        index, tool, callers, singular = pick(rng, choices)
        new = self.rename_noun()
        seen = " ".join([ex["query"] for ex in members]
                        + [w for t in group.tools for w in F.name_words(t["name"])]).lower()
        if either_number(new).search(seen):
            return False
        # the name in the other number now and then (bookLantern for "lanterns"): a request's word and a
        # tool's name often differ in form (split B: "lights" asked, set_light offered)
        flip = self.chance(self.shares.rename_forms)
        renamed = renamed_tool(tool, singular, new, flip)
        if renamed["name"] in {t["name"] for t in group.tools}:
            return False
        queries = [rename_text(ex["query"], singular, new) for ex in callers]
        # every copied string must still be in its request (check_example); a noun touching a value is
        # skipped above, this guards the rest
        if not all(v in query for ex, query in zip(callers, queries) for v in string_arguments([ex])):
            return False
        for ex, query in zip(callers, queries):
            ex["query"] = query
            ex["calls"] = [dict(c, name=renamed["name"]) if c["name"] == tool["name"] else c for c in ex["calls"]]
        group.tools[index] = renamed
        group.used.discard(tool["name"])
        group.used.add(renamed["name"])
        group.origins[renamed["name"]] = group.origins[tool["name"]]
        return True

    def rename_noun(self):
        """The new noun of a renamed group: with rename_words a word of the word source (any of its
        ~60,000 that may_rename_to allows, so that no word can be learned as a tool's: split B's words
        are as new); else a noun
        of the invented tools' training vocabulary, or a pseudo-word as often as invented tools take one."""
        rng = self.rng
        if self.chance(self.shares.rename_words):
            return self.open_tool_word()
        if rng.random() < 0.3:
            return I.pseudo_word(rng, W.PSEUDO_NOUN_ENDINGS)
        return pick(rng, self.vocab[False].nouns)

    def may_rename_to(self, word):
        """Whether a word of the word source may be a renamed tool's new noun: not a past tense,
        participle, adverb or plural (RENAME_WORD_SKIP), and neither it nor its plural a family's word
        (split B's included), a renamed noun or an invented-tool word held out for split A. Both
        numbers, since a renamed name or request may take the plural ("bellow" would make add_bellows,
        and "bellows" is held out; "calorie" would make split B's "calories"). With --more-families, not
        a word of the extra families' tools either (the words of the batches in use, extra_batches)."""
        return not (RENAME_WORD_SKIP.search(word) or
                    any(w in F.FAMILY_WORDS or w in _RENAME_FORMS or w in self.vocab[False].held_words
                        or any(w in words for _, words in self.extra_batches)
                        for w in (word, plural(word))))

    def restyle_tools(self, tools, members, group=None, only=None):
        """restyle_names on a group's shared `tools` and its `members`, each family tool (only those
        named in `only` when given) with the share restyle; `group`'s set (used names, origins)
        follows when given, so that a twin drawn after it sees the new names. A family's tool names
        are few, and a model learns them as wholes: it answered [] or another tool to most of split A
        when only their style changed (docs/training-data.md, "Restyled names")."""
        renamed = restyle_names(self.rng, tools, members, lambda name: (only is None or name in only)
                                and self.chance(self.shares.restyle))
        if group is not None:
            for old, new in renamed.items():
                group.origins[new] = group.origins[old]
                if old in group.used:
                    group.used.discard(old)
                    group.used.add(new)

    def clause_for_set(self, group, kind, imperative=False, besides=None):
        """A clause of `kind` ("family" or "invented") that calls a tool of the set other than
        `besides`: one that no request of the group calls yet; else, when the set has no tool of the
        kind, a new one (add_to_set); else one that another request calls (with other values). The
        set thus keeps about the size make() drew for it. None when nothing works."""
        rng, spec = self.rng, group.spec
        of_kind = [t for t in group.tools if group.kind_of(t) == kind and t["name"] != besides]
        free = [t for t in of_kind if t["name"] not in group.used]
        if free:
            tool = pick(rng, free)
        elif of_kind:
            tool = pick(rng, of_kind)
        else:
            tool = self.add_to_set(group, kind)
        if tool is None:
            return None
        origin = group.origins[tool["name"]]
        for _ in range(20):
            if kind == "invented":
                t, values, args = self.invented_request(self.vocab[spec.invented_held], origin, spec.held_templates)
                clause = Clause("invented", tool, origin.key, t, values, {"name": origin.name, "arguments": args},
                                origin)
            else:
                clause = self.family_clause(origin.family, spec.held_templates, spec.held_values,
                                            variant=origin.name)
                clause.tool = tool
            if not imperative or clause.template.kind == "imp":
                return clause
        return None

    def add_to_set(self, group, kind):
        """A new tool of `kind` in the set at a random place, within MAX_TOOLS and ToolSet.may_add's
        rules; None when none is found."""
        rng, spec = self.rng, group.spec
        if len(group.tools) >= MAX_TOOLS:
            return None
        names = {t["name"] for t in group.tools}
        for _ in range(20):
            if kind == "invented":
                origin = self.invent(self.vocab[spec.invented_held])
                tool = origin.tool()
            else:
                origin = pick(rng, pick(rng, self.distractor_pool(spec)).variants)
                tool = origin.tool(rng)
            if tool["name"] not in names and group.may_add(origin):
                group.add(tool, origin, int(rng.random() * (len(group.tools) + 1)))
                return tool
        return None


# The nouns of the families' tool names that a renamed group may rename (--rename), singular ->
# plural (None: no plural form). Verbs (set, play, call ...) and words that are also parameter names or
# values (text, number, time, mode, lock) are not in it: a renamed request stays a request.
RENAME_NOUNS = {
    "timer": "timers", "countdown": "countdowns", "alarm": "alarms", "reminder": "reminders",
    "calendar": "calendars", "event": "events", "meeting": "meetings", "message": "messages", "sms": None,
    "chat": "chats", "email": "emails", "mail": None, "phone": "phones", "direction": "directions",
    "navigation": None, "route": "routes", "ride": "rides", "taxi": "taxis", "cab": "cabs", "car": "cars",
    "forecast": "forecasts", "weather": None, "brightness": None, "light": "lights", "climate": None,
    "hvac": None, "temperature": "temperatures", "thermostat": "thermostats", "door": "doors",
    "music": None, "playlist": "playlists", "song": "songs", "genre": "genres", "audio": None,
    "speaker": "speakers", "volume": None, "note": "notes", "grocery": "groceries", "shopping": None,
    "list": "lists", "internet": None, "web": None, "measurement": "measurements", "unit": "units",
    "currency": "currencies", "exchange": None, "money": None, "payment": "payments", "flight": "flights",
    "reservation": "reservations", "restaurant": "restaurants", "table": "tables", "headline": "headlines",
    "news": None, "notification": "notifications", "focus": None,
}
_RENAME_FORMS = {}  # a form (singular or plural) -> (singular, is plural)
for _singular, _plural in RENAME_NOUNS.items():
    _RENAME_FORMS[_singular] = (_singular, False)
    if _plural:
        _RENAME_FORMS[_plural] = (_singular, True)
# Word-source words that read as no noun, or whose plural (plural()) would not be a word: past
# tenses, participles, adverbs, plurals.
RENAME_WORD_SKIP = re.compile(r"(?:ed|ing|ly|s)$")
_IDENT_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")  # a word of an identifier, in place
plural = I.plural


def styled(word, like):
    """`word` in the letter case of `like` (Timer -> Lantern, SMS -> LANTERN, timer -> lantern)."""
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def either_number(word):
    """Whole-word matches of `word` or its plural, in lower-case text."""
    return re.compile(r"\b(" + re.escape(word) + "|" + re.escape(plural(word)) + r")\b")


def verb_pattern(verb):
    """Whole-word matches of a verb or its third person (polish, polishes), any case."""
    return re.compile(r"\b(" + re.escape(I.third_person(verb)) + "|" + re.escape(verb) + r")\b", re.IGNORECASE)


def noun_pattern(singular):
    """Whole-word matches of a noun's singular and plural, any case; group 1 is an article "a" or
    "an" right before it, group 2 the noun."""
    forms = [singular] + ([RENAME_NOUNS[singular]] if RENAME_NOUNS[singular] else [])
    return re.compile(r"\b(?:(an?) +)?(" + "|".join(forms) + r")\b", re.IGNORECASE)


def rename_text(text, singular, new):
    """`text` with every whole-word form of `singular` replaced by `new` (its plural for a plural),
    in the same letter case, and an article before it agreeing ("an email" -> "a lantern")."""
    def swap(m):
        word = styled(plural(new) if _RENAME_FORMS[m.group(2).lower()][1] else new, m.group(2))
        if m.group(1) is None:
            return word
        article = "an" if word[:1].lower() in "aeiou" else "a"
        return styled(article, m.group(1)) + " " + word
    return noun_pattern(singular).sub(swap, text)


def swap_word(name, word, new):
    """A tool name with every word that is `word` (in any case) replaced by `new` in its case:
    polish_kettle -> polish_ladle, kettle.polish -> kettle.scrub, PolishKettle -> ScrubKettle."""
    return _IDENT_WORD.sub(lambda m: styled(new, m.group(0)) if m.group(0).lower() == word else m.group(0), name)


def rename_identifier(name, singular, new, flip=False):
    """A tool name with the word `singular` (or its plural) replaced in its own style:
    set_timer -> set_lantern, createTimer -> createLantern, smart_home.light -> smart_home.lantern;
    with `flip` in the other number (set_timer -> set_lanterns, turn_on_lights -> turn_on_lantern)."""
    def swap(m):
        form = _RENAME_FORMS.get(m.group(0).lower())
        if form is None or form[0] != singular:
            return m.group(0)
        return styled(plural(new) if form[1] != flip else new, m.group(0))
    return _IDENT_WORD.sub(swap, name)


def renamed_tool(tool, singular, new, flip=False):
    """A copy of a tool definition with the noun renamed in its name and in every description; with
    `flip` the name takes it in the other number (rename_identifier), the descriptions as they were."""
    params = {k: dict(v, description=rename_text(v["description"], singular, new)) if "description" in v
              else dict(v) for k, v in tool["parameters"]["properties"].items()}
    return {"name": rename_identifier(tool["name"], singular, new, flip),
            "description": rename_text(tool["description"], singular, new),
            "parameters": dict(tool["parameters"], properties=params)}


# The prefixes and suffixes a restyled name may take (restyled_name): words of no family, no
# meaning of their own.
RESTYLE_PREFIXES = ("api_", "svc_", "app.", "my_", "tools.", "cmd_")
RESTYLE_SUFFIXES = ("_v2", "_tool", "_api")


def restyled_name(rng, name, taken=()):
    """A family tool's name in another style, the same words in the same roles: snake_case,
    camelCase or PascalCase with the action first, the object first with the action after a dot
    (set_timer -> timer.set; timer.create -> create_timer), and a prefix or suffix now and then. None
    when every style is another variant's name (VARIANTS) or in `taken`."""
    if "." in name:
        head, tail = name.rsplit(".", 1)
        action, thing = F.name_words(tail), F.name_words(head)
    else:
        words = F.name_words(name)
        action, thing = words[:1], words[1:]
    words = action + thing
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    forms = ["_".join(words), camel, camel[:1].upper() + camel[1:]]
    if thing:
        forms.append("_".join(thing) + "." + "_".join(action))
    forms = [f for f in forms if f != name]
    if not forms:
        return None
    forms += [p + f for p in RESTYLE_PREFIXES for f in forms[:1]] + [forms[0] + s for s in RESTYLE_SUFFIXES]
    forms = [f for f in forms if f != name and f not in VARIANTS and f not in taken]
    return pick(rng, forms) if forms else None


def restyle_names(rng, tools, examples, chosen):
    """Renames in place, in `tools` (a list the `examples` share), each family tool (a name of
    VARIANTS) for which chosen(name) holds by restyled_name, each name other than the others, and
    the calls of `examples` follow; returns {old name: new name}."""
    taken = {t["name"] for t in tools}
    renamed = {}
    for index, tool in enumerate(tools):
        old = tool["name"]
        if old not in VARIANTS or not chosen(old):
            continue
        new = restyled_name(rng, old, taken)
        if new is None:
            continue
        taken.add(new)
        renamed[old] = new
        tools[index] = dict(tool, name=new)
    for ex in examples:
        ex["calls"] = [dict(c, name=renamed.get(c["name"], c["name"])) for c in ex["calls"]]
    return renamed


def perturb_frame(rng, template, p_lead=0.4):
    """An invented tool's request frame ("{vp} with {plist}") with its words perturbed as a family
    template's are (slots.perturb_template: "with" may become any word, a word may be dropped or
    inserted) and, with p_lead, one to three words put before it, sometimes ending in "to" ("bask
    lantern to {vp} ..."): the frames are only ten, and a model trained on them alone reads a lead
    phrase it has not seen ("kindly arrange to") as the request of a family tool. The verb phrase and
    parameter list are not copied values, so nothing is glued to a value."""
    lexicon = any_lexicon(rng)
    t = perturb_template(rng, template, lexicon)
    if rng.random() < p_lead:
        words = " ".join(lexicon.word(rng, plain=True) for _ in range(rng.randint(1, 3)))
        lead = words + (" to " if rng.random() < 0.5 else " ")
        lead = lead[:1].lower() + lead[1:]
        t = Template(lead + t.text, "other", t.family, t.held)
    return t


def perturbed_train(seed, n_train, group, shares, reference, log=None):
    """The training split drawn again by a Generator with `shares` (Shares; a stream of its own, from
    seed + 1), against the held-out splits of `reference`: an example is dropped when it repeats
    another, uses a held-out phrasing, asks a query of a held-out split, offers a tool combination
    of split A or has a string argument that is one of split A's (the checks of check_splits).
    shares.twins of the groups are followed by their [] twin (Generator.twin_group), a group of its
    own, filtered the same way; shares.rename of the groups have a noun of a called family tool
    renamed, before the twin is drawn (Generator.rename_group)."""
    gen = Generator(seed + 1, shares)
    held_queries = {ex["query"] for split in ("A", "B", "C") for ex in reference[split]}
    a_combos = {frozenset(t["name"] for t in ex["tools"]) for ex in reference["A"]}
    a_values = {v for ex in reference["A"] for v in novel_values(ex)}
    out, seen, rejected, groups, twinned, renamed = [], set(), Counter(), 0, 0, 0
    while len(out) < n_train:
        made = gen.make_group("train", min(group, n_train - len(out))) if group > 1 else [gen.make("train")]
        if made is None or made == [None]:
            rejected["unfillable"] += 1
            continue
        if group > 1 and gen.chance(shares.rename):
            if gen.rename_group(made):
                renamed += 1
            else:
                rejected["no noun to rename"] += 1
        if group > 1 and shares.restyle:
            gen.restyle_tools(made[0]["tools"], made, gen.last_group)
        batches = [made]
        if group > 1 and gen.chance(shares.twins):
            twin = gen.twin_group(made)
            if twin is None:
                rejected["no twin"] += 1
            else:
                # the tools the twin brought in, restyled as the group's were
                gen.restyle_tools(twin[0]["tools"], twin, only={t["name"] for t in twin[0]["tools"]}
                                  - {t["name"] for t in made[0]["tools"]})
                batches.append(twin)
        for members in batches:
            kept = 0
            for ex in members:
                if len(out) >= n_train:
                    break
                key = example_key(ex)
                why = ("duplicate" if key in seen else "held-out phrasing" if HELD_FRAGMENT_RE.search(ex["query"].lower())
                       else "query of a held-out split" if ex["query"] in held_queries
                       else "tool combination of split A" if frozenset(t["name"] for t in ex["tools"]) in a_combos
                       else "a value of split A" if string_arguments([ex]) & a_values
                       else "its noun in another tool" if names_noun_elsewhere(ex, gen.by_noun.get(ex["query"]))
                       else None)
                if why:
                    rejected[why] += 1
                    continue
                seen.add(key)
                ex["id"] = f"train-{len(out):06d}"
                if group > 1:
                    ex["group"] = groups
                out.append(ex)
                kept += 1
            groups += kept > 0
            twinned += kept > 0 and members is not made
    if log:
        log(f"data: train drawn again with {shares.options()}: {len(out)} examples, {groups} groups" +
            (f" ({twinned} [] twins)" if shares.twins else "") +
            (f" ({gen.near_missed} called tools replaced by a near miss" +
             (f", {gen.verb_missed} of them by verb" if shares.verb_misses else "") + ")" if shares.near_twins else "") +
            (f" ({renamed} groups renamed)" if shares.rename else "") + " "
            f"({dict(rejected) or 'none'} rejected)")
    return out


def names_noun_elsewhere(ex, noun):
    """Whether a tool that `ex` does not call holds `noun` in its name or description: a request that
    names its tool by that noun alone (invented.noun_request) would fit it as well."""
    if noun is None:
        return False
    called = {c["name"] for c in ex["calls"]}
    return any(noun in F.name_words(t["name"]) or re.search(rf"\b{re.escape(noun)}\b", t["description"].lower())
               for t in ex["tools"] if t["name"] not in called)


def example_key(ex):
    return (ex["system"], ex["query"], tuple(t["name"] for t in ex["tools"]))


def generate(seed, n_train, n_eval, log=None, group=1, **shares):
    """{split: [example]} for all four splits, checked. With group > 1 the training examples come in
    groups of up to `group` that share their tools and system turn (Generator.make_group), each line
    with its group's number in "group"; the other splits are made as with group 1.

    `shares` are Shares' fields (perturb=0.8, twins=0.2, ...). With perturb > 0 the held-out splits
    are those of the same seed without them (so that models trained on either data are measured on
    the same requests), and the training split is drawn again with them (perturbed_train)."""
    shares = Shares(**shares)
    if group < 1:
        raise ValueError(f"generate: group {group} must be at least 1")
    if shares.perturb:
        splits = generate(seed, n_train, n_eval, log, group)
        splits["train"] = perturbed_train(seed, n_train, group, shares, splits, log)
        problems = check_splits(splits)
        if problems:
            raise RuntimeError("data: the splits fail their checks:\n  " + "\n  ".join(problems[:20]))
        return splits
    gen = Generator(seed)
    counts = {"train": n_train, "A": n_eval, "B": n_eval, "C": n_eval}
    seen_keys = set()
    train_values = set()  # string arguments of the training split, once it is made
    query_split = {}
    train_combos = set()
    splits = {}
    for split in SPLITS:
        out = []
        rejected = Counter()
        grouped = split == "train" and group > 1
        groups = 0
        while len(out) < counts[split]:
            made = gen.make_group(split, min(group, counts[split] - len(out))) if grouped else [gen.make(split)]
            if made is None or made == [None]:
                rejected["unfillable"] += 1
                continue
            if split == "A":
                made = [ex for ex in made if not any(v in train_values for v in novel_values(ex))]
                if not made:
                    rejected["value seen in train"] += 1
                    continue
            kept = 0
            for ex in made:
                key = example_key(ex)
                if key in seen_keys:
                    rejected["duplicate"] += 1
                    continue
                q = ex["query"]
                owner = query_split.get(q)
                if owner is not None and owner != split:
                    rejected["query in another split"] += 1
                    continue
                combo = frozenset(t["name"] for t in ex["tools"])
                if split == "train":
                    if HELD_FRAGMENT_RE.search(q.lower()):
                        rejected["held-out phrasing"] += 1
                        continue
                    train_combos.add(combo)
                elif split == "A" and combo in train_combos:
                    rejected["tool combination seen in train"] += 1
                    continue
                seen_keys.add(key)
                query_split[q] = split
                ex["id"] = f"{split}-{len(out):06d}"
                if grouped:
                    ex["group"] = groups
                out.append(ex)
                kept += 1
            groups += kept > 0
        splits[split] = out
        if split == "train":
            train_values = string_arguments(out)
        if log:
            extra = f", {groups} groups" if grouped else ""
            log(f"data: {split}: {len(out)} examples{extra} ({dict(rejected) or 'none'} rejected)")
    problems = check_splits(splits)
    if problems:
        raise RuntimeError("data: the splits fail their checks:\n  " + "\n  ".join(problems[:20]))
    return splits


# --- checks ----------------------------------------------------------------------------------------

def string_arguments(examples):
    """Every string argument value of the examples' calls."""
    return {v for ex in examples for call in ex["calls"] for v in call["arguments"].values() if isinstance(v, str)}


def novel_values(ex):
    """The values of `ex`'s calls that come from value sources: a family parameter that copies a
    Values slot (names, places, free text ...: families.is_value_source), and every string parameter
    of an invented tool that has no enum. In split A each of them is new: never a training argument."""
    out = []
    tools = {t["name"]: t for t in ex["tools"]}
    for call in ex["calls"]:
        variant = VARIANTS.get(call["name"])
        if variant is None:  # an invented tool
            props = tools.get(call["name"], {}).get("parameters", {}).get("properties", {})
            out += [v for k, v in call["arguments"].items()
                    if isinstance(v, str) and "enum" not in props.get(k, {})]
            continue
        params = {p.name: p for p in variant.params}
        for key, value in call["arguments"].items():
            p = params.get(key)
            if p is not None and p.conv == "copy" and isinstance(value, str) \
                    and all(F.is_value_source(variant.family.slots[s]) for s in p.slots):
                out.append(value)
    return out


KEYS = ["id", "split", "family", "system", "tools", "query", "calls"]


_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_WORDS = re.compile(r"[a-z]+(?:-[a-z]+)?")
_NUMBER_WORDS = {number_words(n): n for n in range(100)}
_ONE_UNIT = re.compile(r"\ban? (?:second|minute|hour)\b")


def mentioned_numbers(query):
    """The numbers a request states: digits, number words, and "a"/"an" before a time unit."""
    q = query.lower()
    out = {json_number(m) for m in _DIGITS.findall(q)}
    out.update(_NUMBER_WORDS[w] for w in _WORDS.findall(q) if w in _NUMBER_WORDS)
    if _ONE_UNIT.search(q):
        out.add(1)
    return out


def check_example(ex, checked_tools=None):
    """Problems with one example: its shape, its tools, and its gold calls. `checked_tools` (id ->
    result) skips tool definitions already checked: family tools are shared objects."""
    problems = []
    where = ex.get("id", "?")
    if list(ex) != KEYS and list(ex) != KEYS + ["group"]:
        return [f"{where}: keys {list(ex)} are not {KEYS} (and optionally \"group\")"]
    if not 1 <= len(ex["tools"]) <= 6:
        problems.append(f"{where}: {len(ex['tools'])} tools")
    names = [t["name"] for t in ex["tools"]]
    if len(set(names)) != len(names):
        problems.append(f"{where}: duplicate tool names {names}")
    for t in ex["tools"]:
        if checked_tools is None:
            err = check_tool(t)
        else:
            err = checked_tools.get(id(t), "unchecked")
            if err == "unchecked":
                err = checked_tools[id(t)] = check_tool(t)
        if err:
            problems.append(f"{where}: {err}")
    if ex["split"] == "C" and ex["calls"]:
        problems.append(f"{where}: a split-C example has calls")
    by_name = {t["name"]: t for t in ex["tools"]}
    for call in ex["calls"]:
        err = validate_call(call, ex["tools"])
        if err:
            problems.append(f"{where}: {err}")
            continue
        props = by_name[call["name"]]["parameters"]["properties"]
        for key, value in call["arguments"].items():
            # A string without an enum is copied: it must be in the request exactly as written.
            if isinstance(value, str) and "enum" not in props[key] and value not in ex["query"]:
                problems.append(f"{where}: {call['name']}.{key} = {value!r} is not in the query {ex['query']!r}")
            # A number is stated in the request, or is a stated duration in minutes or seconds.
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                stated = mentioned_numbers(ex["query"])
                if value not in stated and not any(value in (n * 60, n * 3600) for n in stated):
                    problems.append(f"{where}: {call['name']}.{key} = {value} does not follow from the query {ex['query']!r}")
    return problems


def check_groups(splits):
    """The rules of grouped training data (--group): only the training split has "group"; then every
    line has it, its value is the group's number (0, 1, 2 ... with each group's lines consecutive),
    and a group's examples share their system turn and tools, and differ in their requests and,
    where they call tools, in their calls."""
    problems = []
    for split, examples in splits.items():
        grouped = [ex for ex in examples if "group" in ex]
        if not grouped:
            continue
        if split != "train":
            problems.append(f"{grouped[0]['id']}: a split-{split} example has a group (only train is grouped)")
            continue
        if len(grouped) != len(examples):
            missing = next(ex for ex in examples if "group" not in ex)
            problems.append(f"{missing['id']}: no group, but other training examples have one")
            continue
        start = 0
        for k, ex in enumerate(examples + [None]):
            if ex is not None and ex["group"] == examples[start]["group"]:
                continue
            first, members = examples[start], examples[start:k]
            expected = 0 if start == 0 else examples[start - 1]["group"] + 1
            if first["group"] != expected:
                problems.append(f"{first['id']}: group {first['group']!r} follows group {expected - 1} "
                                f"(groups are numbered 0, 1, 2 ... and their lines are consecutive)")
            for m in members[1:]:
                if m["system"] != first["system"] or m["tools"] != first["tools"]:
                    problems.append(f"{m['id']}: group {m['group']}: its system turn or tools differ from {first['id']}'s")
            if len({m["query"] for m in members}) != len(members):
                problems.append(f"{first['id']}: group {first['group']}: a request is repeated")
            calls = [json.dumps(m["calls"]) for m in members if m["calls"]]
            if len(set(calls)) != len(calls):
                problems.append(f"{first['id']}: group {first['group']}: two requests have the same calls")
            start = k
    return problems


def _tool_strings(tool):
    """Every string in a tool definition: name, description, keys, descriptions, enum values."""
    out = [tool["name"], tool["description"]]
    for key, p in tool["parameters"]["properties"].items():
        out.append(key)
        out.append(p.get("description", ""))
        out += [str(e) for e in p.get("enum", ())]
    return out


def check_splits(splits):
    """Every check of the splits (docs/training-data.md, "Checks"); returns the problems found."""
    problems = []
    checked_tools = {}
    for split, examples in splits.items():
        for ex in examples:
            if ex["split"] != split:
                problems.append(f"{ex['id']}: in {split}.jsonl but split {ex['split']}")
            problems += check_example(ex, checked_tools)
    train = splits.get("train", [])
    problems += check_groups(splits)
    # No duplicates across splits: an example, or a request, belongs to one split.
    owner = {}
    for split, examples in splits.items():
        for ex in examples:
            key = example_key(ex)
            if key in owner:
                problems.append(f"{ex['id']}: the same example as {owner[key]}")
            owner[key] = ex["id"]
    queries = {}
    for split, examples in splits.items():
        for ex in examples:
            other = queries.setdefault(ex["query"], split)
            if other != split:
                problems.append(f"{ex['id']}: query {ex['query']!r} is also in {other}")
    # Split B: no B tool name and no B word in any training prompt.
    train_names = {t["name"] for ex in train for t in ex["tools"]}
    for name in sorted(train_names & F.B_TOOL_NAMES):
        problems.append(f"split-B tool {name!r} is offered in train")
    # Every string of the training prompts, deduplicated, searched at once (identifiers split).
    texts = set()
    seen_tools = set()
    for ex in train:
        texts.add(ex["system"])
        texts.add(ex["query"])
        for t in ex["tools"]:
            if id(t) not in seen_tools:
                seen_tools.add(id(t))
                texts.update(_tool_strings(t))
    b_word_re = re.compile(r"(?<![a-z])(?:" + "|".join(sorted(F.B_WORDS)) + r")(?![a-z])")
    for m in b_word_re.finditer(F._CAMEL.sub(" ", "\n".join(sorted(texts))).lower()):
        problems.append(f"split-B word {m.group(0)!r} in a training prompt")
    for ex in splits.get("B", []):
        if not any(n in F.B_TOOL_NAMES for n in (c["name"] for c in ex["calls"])):
            problems.append(f"{ex['id']}: a split-B example calls no split-B tool")
    # Split A: no held-out phrasing in train; held-out values never a training argument; new combos.
    for ex in train:
        m = HELD_FRAGMENT_RE.search(ex["query"].lower())
        if m:
            problems.append(f"{ex['id']}: held-out template text {m.group(0)!r} in a training request")
        for call in ex["calls"]:
            for value in call["arguments"].values():
                if isinstance(value, str) and value in F.HELD_VALUES:
                    problems.append(f"{ex['id']}: held-out value {value!r} is a training argument")
    held_inv = I.HELD_WORDS
    for name in sorted(train_names):
        bad = set(F.name_words(name)) & held_inv
        if bad:
            problems.append(f"tool {name!r} in train uses held-out invented word {sorted(bad)[0]!r}")
    combos = {frozenset(t["name"] for t in ex["tools"]) for ex in train}
    for ex in splits.get("A", []):
        if frozenset(t["name"] for t in ex["tools"]) in combos:
            problems.append(f"{ex['id']}: its tool combination is in train")
    # Split A's values are new: no value of a value source is a training argument.
    train_values = string_arguments(train)
    for ex in splits.get("A", []):
        for value in novel_values(ex):
            if value in train_values:
                problems.append(f"{ex['id']}: value {value!r} is also a training argument (split A's values are new)")
    return problems


# --- statistics and output -----------------------------------------------------------------------

def statistics(splits):
    out = {}
    for split, examples in splits.items():
        n = len(examples)
        fam = Counter()
        for ex in examples:
            for part in ex["family"].split("+"):
                fam[part] += 1
        ntools = Counter(len(ex["tools"]) for ex in examples)
        out[split] = {
            "examples": n,
            "families": dict(sorted(fam.items())),
            "tools_per_prompt": {str(k): ntools[k] for k in sorted(ntools)},
            "mean_tools": round(sum(len(ex["tools"]) for ex in examples) / max(n, 1), 3),
            "share_no_call": round(sum(not ex["calls"] for ex in examples) / max(n, 1), 4),
            "share_two_calls": round(sum(len(ex["calls"]) == 2 for ex in examples) / max(n, 1), 4),
            "share_invented_target": round(sum("invented" in ex["family"].split("+") and bool(ex["calls"])
                                               for ex in examples) / max(n, 1), 4),
            "share_system": round(sum(bool(ex["system"]) for ex in examples) / max(n, 1), 4),
            "mean_query_chars": round(sum(len(ex["query"]) for ex in examples) / max(n, 1), 1),
            "share_numbers_converted": share_numbers_converted(examples),
            "values": value_statistics(examples),
        }
        if examples and "group" in examples[0]:
            groups = Counter(ex["group"] for ex in examples)
            out[split]["groups"] = len(groups)
            out[split]["group_sizes"] = {str(k): v for k, v in sorted(Counter(groups.values()).items())}
    return out


def share_numbers_converted(examples):
    """The share of numeric arguments that are not written in the request as digits (number words,
    "an hour", a duration in a larger unit), rounded to 4 places."""
    numbers = converted = 0
    for ex in examples:
        stated = None
        for call in ex["calls"]:
            for v in call["arguments"].values():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if stated is None:
                        stated = {json_number(m) for m in _DIGITS.findall(ex["query"])}
                    numbers += 1
                    converted += v not in stated
    return round(converted / max(numbers, 1), 4)


def value_statistics(examples):
    """How varied the copied values of value sources are (novel_values): how many, how many
    distinct, and the most repeated."""
    counts = Counter(v for ex in examples for v in novel_values(ex))
    top = counts.most_common(5)
    return {"copied": sum(counts.values()), "distinct": len(counts),
            "max_repeat": top[0][1] if top else 0, "most_repeated": [[v, c] for v, c in top]}


def manifest(seed, counts):
    return {
        "seed": seed,
        "counts": counts,
        "families_train": [f.name for f in F.TRAIN_FAMILIES],
        "families_B": {f.name: {"tools": [v.name for v in f.variants], "words": sorted(f.words)}
                       for f in F.B_FAMILIES},
        "held_out_templates": {f.name: [t.text for t in f.held_templates] for f in F.TRAIN_FAMILIES}
        | {"invented": [t.text for t in held_templates() if t.family == "invented"]},
        "held_out_template_fragments": sorted(set(HELD_FRAGMENTS)),
        "held_out_values": sorted(F.HELD_VALUES),
        "value_sources": dict(zip(SOURCES, SOURCE_WEIGHTS)),
        "word_source": W.WORD_SOURCE.describe(),
        "held_out_invented_words": sorted(I.HELD_WORDS),
    }


def write_split(path, examples):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps(ex, ensure_ascii=False, separators=(",", ":")))
            f.write("\n")
    os.replace(tmp, path)


def read_split(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]




def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--train", type=int, default=200000, help="training examples (default 200000)")
    ap.add_argument("--eval", type=int, default=1000, help="examples in each of A, B and C (default 1000)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--group", type=int, default=1,
                    help="training examples in groups of up to K that share tools and system turn, each "
                         "line with its group's number in \"group\" (default 1: no groups)")
    for f in fields(Shares):
        ap.add_argument(option(f.name), type=float, default=0.0, help=f.metadata["help"])
    args = ap.parse_args(argv)
    shares = Shares(**{f.name: getattr(args, f.name) for f in fields(Shares)})
    for f in fields(shares):
        value, needs = getattr(shares, f.name), f.metadata["needs"]
        if not 0.0 <= value <= 1.0:
            ap.error(f"{option(f.name)} {value}: must be from 0 to 1")
        if value and not all(getattr(args, n) != ap.get_default(n) for n in needs):
            ap.error(f"{option(f.name)} needs {' and '.join(map(option, needs))} ({f.metadata['why']})")
    if args.train < 1 or args.eval < 1:
        ap.error("--train and --eval must be at least 1")
    if args.group < 1:
        ap.error(f"--group {args.group}: must be at least 1")
    start = time.time()
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    try:
        splits = generate(args.seed, args.train, args.eval, log, args.group, **asdict(shares))
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    for split, examples in splits.items():
        write_split(os.path.join(args.out, f"{split}.jsonl"), examples)
    stats = statistics(splits)
    counts = {s: len(e) for s, e in splits.items()}
    with open(os.path.join(args.out, "stats.json"), "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1, ensure_ascii=False)
    info = manifest(args.seed, counts)
    if args.group > 1:
        info["group"] = args.group
    info.update((name, value) for name, value in asdict(shares).items() if value)
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1, ensure_ascii=False)
    for split in SPLITS:
        s = stats[split]
        print(f"{split:5s} {s['examples']:7d} examples  tools/prompt {s['mean_tools']:.2f}  "
              f"[] {s['share_no_call']:.1%}  two calls {s['share_two_calls']:.1%}  "
              f"invented {s['share_invented_target']:.1%}  query {s['mean_query_chars']:.0f} chars"
              + (f"  {s['groups']} groups" if "groups" in s else ""))
    print(f"data: wrote {args.out} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
