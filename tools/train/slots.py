"""Slot values and request templates (docs/training-data.md, "Conventions").

A request template is text with slots: `set a timer for {dur} called {label}`. A slot is filled with a
SlotValue: the text that goes into the request, the string a copied argument takes (`copy`), and the
value a converted argument takes (`value`: a number, a bool, a duration in seconds, an enum word).

Copied values (names, places, messages ...) are high-entropy so that the model must copy them from
the request rather than remember them: a Values slot draws from its curated list (25%), or builds a
value from words of the word source (45%, Debian's wamerican) or from pseudo-words (30%); the
builders are at the end of the slot kinds ("Built values"). Numbers range widely and only a modest
share is converted (number words, a larger time unit).
Placeholders may carry one modifier: `{msg:q}` always quotes free text, `{day:bare}` writes a date
without its preposition, `{power:en}` writes a switch as enable/disable instead of on/off.

Every gold value follows from the request by one of the rules in docs/training-data.md: strings are
copied exactly as written (without surrounding quotes or a leading "on"/"at"); number words become
digits; durations are converted to the unit the parameter names; on/off, enable/disable and similar
switch words become booleans; a word becomes the enum value that equals it ignoring case.
"""

import math
import re

from wordlists import (ACCENTS, CITY_FORMS, CJK_GIVEN, CJK_PLACE_ENDINGS, CJK_SURNAMES, COLOURS,
                       COMPANY_SUFFIXES, CYRILLIC, DEVICE_NOUNS, EMAIL_TLDS, GENRE_WORDS, MASTHEADS,
                       MONTHS, PLACE_KINDS, PSEUDO_CODAS, PSEUDO_ONSETS, PSEUDO_VOWELS, REQUEST_WORDS,
                       RESTAURANT_KINDS, SHOW_FORMS, STREET_TYPES, WEEKDAYS, WORD_SOURCE, split_values)

# --- slot values ---------------------------------------------------------------------------------


class SlotValue:
    """One slot's filling. `free` marks free text (a message, a task): it may be quoted, and it is
    quoted whenever the words after it could be read as part of it."""

    __slots__ = ("text", "copy", "value", "free", "alt")

    def __init__(self, text, copy=None, value=None, free=False, alt=None):
        self.text = text
        self.copy = text if copy is None else copy
        self.value = self.copy if value is None else value
        self.free = free
        self.alt = alt  # modifier -> text, e.g. {"bare": "Friday", "en": "enable"}

    def __repr__(self):
        return f"SlotValue({self.text!r}, copy={self.copy!r}, value={self.value!r})"


# --- numbers -------------------------------------------------------------------------------------

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy", 8: "eighty",
         9: "ninety"}


def number_words(n):
    """English words for 0..99 ("forty-five"): the only number words requests use."""
    if not 0 <= n <= 99:
        raise ValueError(f"number_words: {n} is outside 0..99")
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + ("-" + _ONES[ones] if ones else "")


def say_int(rng, n, words_p):
    """An integer as a request writes it: digits, or words (0..99) with probability words_p."""
    if n <= 99 and rng.random() < words_p:
        return number_words(n)
    return str(n)


def decimal_text(value, places):
    """`value` with `places` decimals, as written in a request (12.50)."""
    return f"{value:.{places}f}"


def json_number(text):
    """The JSON value of a number written in a request: an int when it has no fraction, else the
    float (12.50 -> 12.5, 3.0 -> 3). Gold numbers are always written this way."""
    f = float(text)
    return int(f) if f == int(f) and "e" not in text.lower() else f


def pick(rng, seq):
    """A uniformly random element of `seq` (random.choice is several times slower)."""
    return seq[int(rng.random() * len(seq))]


def weighted(rng, items, weights):
    """One of `items`, with probability proportional to `weights` (random.choices is slower)."""
    x = rng.random() * sum(weights)
    for item, w in zip(items, weights):
        x -= w
        if x < 0:
            return item
    return items[-1]


# --- value rules and lexicons ----------------------------------------------------------------------


class Unfillable(Exception):
    """A slot cannot be filled under the variant's constraints (the caller picks again)."""


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_LETTERS = re.compile(r"[a-z]+")


def letter_runs(text):
    """The lowercase letter runs of `text`, with identifiers split (trackPackage -> track, package):
    the words the split-B check reads (families.words_in)."""
    return set(_LETTERS.findall(_CAMEL.sub(" ", text).lower()))


class ValueRules:
    """What no drawn value may be (families.py and invented.py fill the sets at import):

      banned_words   words no value may contain (split B's words, families.B_WORDS)
      request_words  words a request uses for something else (switch and enum words, dates, units,
                     number words): never a random word of a built value
      held_values    curated values held out for split A: a training value never equals one
    """

    def __init__(self):
        self.banned_words = set()
        self.request_words = set(REQUEST_WORDS)
        self.held_values = set()

    def allows(self, text, held):
        """Whether `text` may be a value of a split-A request (`held`) or of any other."""
        if letter_runs(text) & self.banned_words:
            return False
        return held or text not in self.held_values


RULES = ValueRules()


def cap(word):
    """The word with its first letter capitalised (cap("lantern") = "Lantern")."""
    return word[:1].upper() + word[1:]


def accent(rng, word, p):
    """With probability p, one letter of `word` (not the first) in an accented form: "Søren"."""
    if rng.random() >= p:
        return word
    spots = [i for i in range(1, len(word)) if word[i] in ACCENTS]
    if not spots:
        return word
    i = pick(rng, spots)
    return word[:i] + pick(rng, ACCENTS[word[i]]) + word[i + 1:]


def pseudo_word(rng):
    """A pronounceable made-up word of 3 to 10 letters, one to three syllables ("flemwick")."""
    while True:
        n = weighted(rng, (1, 2, 3), (30, 50, 20))
        word = ""
        for i in range(n):
            word += pick(rng, PSEUDO_ONSETS) + pick(rng, PSEUDO_VOWELS)
            if i == n - 1 or rng.random() < 0.3:
                word += pick(rng, PSEUDO_CODAS)
        if 3 <= len(word) <= 10:
            return word


class Lexicon:
    """Where a built value's words come from: `word` a lowercase word, `name` a capitalised one (a
    proper noun). Never a word of RULES.request_words or RULES.banned_words; some carry an accented
    letter (WORD_ACCENT_P of words, 8% of names) unless `plain` (email addresses)."""

    WORD_ACCENT_P = 0.0

    def word(self, rng, plain=False):
        for _ in range(100):
            w = self._word(rng)
            if w not in RULES.request_words and w not in RULES.banned_words:
                return w if plain else accent(rng, w, self.WORD_ACCENT_P)
        raise RuntimeError(f"{type(self).__name__}: no allowed word in 100 draws")

    def name(self, rng, plain=False):
        for _ in range(100):
            w = self._name(rng)
            if w.lower() not in RULES.request_words and w.lower() not in RULES.banned_words:
                return w if plain else accent(rng, w, 0.08)
        raise RuntimeError(f"{type(self).__name__}: no allowed name in 100 draws")


class DictionaryWords(Lexicon):
    """Words of the word source (wordlists.WORD_SOURCE, Debian's wamerican). Its common words keep
    their spelling; its proper nouns may take an accent ("Wälles")."""

    def _word(self, rng):
        return pick(rng, WORD_SOURCE.common)

    def _name(self, rng):
        return pick(rng, WORD_SOURCE.proper)


class PseudoWords(Lexicon):
    """Made-up words (pseudo_word); 6% of them carry an accent ("flëmwick")."""

    WORD_ACCENT_P = 0.06

    def _word(self, rng):
        return pseudo_word(rng)

    def _name(self, rng):
        return cap(pseudo_word(rng))


# A copied value comes from the slot's curated list, or is built from the word source's words, or
# from pseudo-words, in these shares (docs/training-data.md, "Value sources").
SOURCES = ("curated", "words", "pseudo")
SOURCE_WEIGHTS = (25, 45, 30)
CURATED_FULL = 150  # a curated list this long (training values) or longer takes its whole share
LEXICONS = {"words": DictionaryWords(), "pseudo": PseudoWords()}


def any_lexicon(rng):
    """The word source or pseudo-words, in SOURCE_WEIGHTS' proportion."""
    return LEXICONS[weighted(rng, SOURCES[1:], SOURCE_WEIGHTS[1:])]


# --- slot kinds ------------------------------------------------------------------------------------
# A slot kind samples a SlotValue: sample(rng, held, allowed). `held` draws for split A (the held-out
# part of curated lists); `allowed` is a constraint from the tool variant (the smallest duration unit
# it can take, or the set of enum values, lowercase), or None.


class Values:
    """A copied value (a name, a place, a message ...), copied verbatim, from one of three sources
    (SOURCES): the curated list `curated` (split into training and held-out values unless
    `holdout` is False), or `build(rng, lexicon)` with the word source's or pseudo-words. `free`
    marks free text (it may be quoted). `curated_share` scales the curated list's share (a list that
    many requests draw from takes less). A value passes RULES (retried up to 50 times)."""

    def __init__(self, curated, build, free=False, holdout=True, curated_share=1.0):
        items = list(dict.fromkeys(curated))
        self.holdout = holdout
        self.curated_share = curated_share
        self.train, self.held = split_values(items) if holdout else (items, items)
        self.build = build
        self.free = free

    def curated_lists(self):
        """The Values objects whose curated lists this slot draws from (families: HELD_VALUES)."""
        return [self]

    def from_list(self, rng, held):
        return pick(rng, self.held if held else self.train)

    def sample_source(self, rng):
        """Which source the next value comes from. A curated list's share is SOURCE_WEIGHTS' for a
        list of CURATED_FULL training values or more, and proportionally less for a shorter list,
        so that no curated value repeats often enough to be worth remembering."""
        curated = SOURCE_WEIGHTS[0] * self.curated_share * min(1.0, len(self.train) / CURATED_FULL)
        return weighted(rng, SOURCES, (curated,) + SOURCE_WEIGHTS[1:])

    def draw(self, rng, held):
        """The text of one value."""
        for _ in range(50):
            source = self.sample_source(rng)
            text = self.from_list(rng, held) if source == "curated" else self.build(rng, LEXICONS[source])
            if RULES.allows(text, held):
                return text
        raise Unfillable("no value passes the value rules in 50 draws")

    def sample(self, rng, held, allowed=None):
        return SlotValue(self.draw(rng, held), free=self.free)


class Person(Values):
    """A contact: a first name, sometimes with a surname, or Mom/Dad (training only); copied
    verbatim. Built names are a proper noun or two, and a few are written in CJK or Cyrillic."""

    def __init__(self, first, surnames, family):
        super().__init__(first, person_name)
        self.surnames = Values(surnames, person_name)
        self.family = family

    def curated_lists(self):
        return [self, self.surnames]

    def from_list(self, rng, held):
        if not held and rng.random() < 0.1:
            return pick(rng, self.family)
        name = super().from_list(rng, held)
        if rng.random() < 0.25:
            name += " " + self.surnames.from_list(rng, held)
        return name


class Word:
    """A word that selects an enum value (or is copied): text as written, value lowercase. When the
    parameter is copied (no enum), `novel(rng, lexicon)` makes a new word with probability novel_p
    (a made-up language, a random currency code)."""

    def __init__(self, items, forms=None, novel=None, novel_p=0.0):
        self.items = list(dict.fromkeys(items))
        self.forms = forms or {}  # word -> alternative spellings in requests (same lowercase)
        self.novel, self.novel_p = novel, novel_p

    def sample(self, rng, held, allowed=None):
        if allowed is None and self.novel is not None and rng.random() < self.novel_p:
            for _ in range(20):
                text = self.novel(rng, any_lexicon(rng))
                if RULES.allows(text, held):
                    return SlotValue(text, copy=text, value=text.lower())
        items = self.items if allowed is None else [w for w in self.items if w.lower() in allowed]
        if not items:
            raise Unfillable("no word fits the enum")
        w = pick(rng, items)
        text = pick(rng, self.forms.get(w, [w]))
        return SlotValue(text, copy=text, value=w.lower())


class Flag:
    """A switch: text from `forms` (modifier -> (true words, false words)), value a bool."""

    def __init__(self, forms, only=None):
        self.forms = forms
        self.only = only  # True or False: the slot only ever takes that value

    def sample(self, rng, held, allowed=None):
        """`allowed` (a bool) is the only value the tool takes (turn_on_lights: True)."""
        if allowed is not None and self.only is not None and allowed != self.only:
            raise Unfillable(f"the switch only takes {self.only}")
        if allowed is not None:
            value = allowed
        else:
            value = self.only if self.only is not None else rng.random() < 0.5
        alt = {mod: pick(rng, words[0] if value else words[1]) for mod, words in self.forms.items()}
        return SlotValue(alt[""], copy=alt[""], value=value, alt=alt)


def log_uniform(rng, lo, hi):
    """An integer in [lo, hi], uniform in its logarithm: small numbers stay common, large ones occur
    (0, when lo is 0, one time in twenty)."""
    if lo == 0 and rng.random() < 0.05:
        return 0
    lo1 = max(lo, 1)
    n = int(math.exp(rng.uniform(math.log(lo1), math.log(hi + 1))))
    return min(max(n, lo1), hi)


WORDS_P = 0.25  # share of integers 0..99 written as words ("forty-five"): a conversion


class Integer:
    """An integer in [lo, hi] (log-uniform when `log`); `fmt` wraps the written number ("{} people")."""

    def __init__(self, lo, hi, words_p=WORDS_P, fmt="{}", step=1, log=False):
        self.lo, self.hi, self.words_p, self.fmt, self.step, self.log = lo, hi, words_p, fmt, step, log

    def sample(self, rng, held, allowed=None):
        if self.log:
            n = log_uniform(rng, self.lo, self.hi)
            n = max(self.lo, n - n % self.step)
        else:
            n = rng.randrange(self.lo, self.hi + 1, self.step)
        # "eighty-five%" is not how anyone writes: a percent sign always follows digits.
        words_p = 0 if "%" in self.fmt else self.words_p
        return SlotValue(self.fmt.format(say_int(rng, n, words_p)), value=n)


class Amount:
    """A number as written: an integer (log-uniform in [lo, hi]), or with one or two decimals
    (12.50 -> 12.5)."""

    def __init__(self, lo, hi, decimals_p=0.35):
        self.lo, self.hi, self.decimals_p = lo, hi, decimals_p

    def sample(self, rng, held, allowed=None):
        whole = log_uniform(rng, self.lo, self.hi)
        if whole > 100 and rng.random() < 0.4:
            whole = max(self.lo, whole - whole % pick(rng, (5, 10, 50, 100)))
        text = str(whole)
        if rng.random() < self.decimals_p:
            text = f"{whole}.{rng.randint(0, 9)}" if rng.random() < 0.3 else f"{whole}.{rng.randint(0, 99):02d}"
        return SlotValue(text, value=json_number(text))


UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


class Duration:
    """A length of time: "5 minutes", "an hour", "ninety seconds". value = total seconds.

    `allowed` is the unit (in seconds) of the parameter that takes it, or None for a string parameter
    that copies it. Mostly (85%) the request states the parameter's own unit over a wide range
    (`ranges`: the number is copied); otherwise (CONVERT_P) a larger unit over a small range
    (`convert_ranges`: hours 1..12, minutes 1..90), which the gold converts. A request never uses a
    smaller unit than the parameter's, so the result is always a whole number."""

    RANGES = {"second": (5, 3600), "minute": (1, 600), "hour": (1, 48)}
    CONVERT_RANGES = {"minute": (1, 90), "hour": (1, 12)}
    CONVERT_P = 0.15

    def __init__(self, ranges=None, convert_ranges=None):
        self.ranges = dict(self.RANGES, **(ranges or {}))
        self.convert_ranges = dict(self.CONVERT_RANGES, **(convert_ranges or {}))

    def sample(self, rng, held, allowed=None):
        if allowed is None:
            unit = pick(rng, tuple(UNIT_SECONDS))
            lo, hi = self.ranges[unit]
        else:
            own = next(u for u, s in UNIT_SECONDS.items() if s == allowed)
            larger = [u for u, s in UNIT_SECONDS.items() if s > allowed]
            if larger and rng.random() < self.CONVERT_P:
                unit = pick(rng, larger)
                lo, hi = self.convert_ranges[unit]
            else:
                unit = own
                lo, hi = self.ranges[unit]
        n = log_uniform(rng, lo, hi)
        if n == 1 and rng.random() < 0.5:
            number = "an" if unit == "hour" else "a"
        else:
            number = say_int(rng, n, WORDS_P)
        text = f"{number} {unit}" + ("" if n == 1 else "s")
        return SlotValue(text, value=n * UNIT_SECONDS[unit])


class TimeOfDay:
    """A clock time in one of many spellings, copied verbatim: 7:05, 19:05, 07:05, 7.05pm, 7 pm,
    7 o'clock, noon, half past 7, 19h05."""

    SUFFIXES = ("am", "pm", " am", " pm", " a.m.", " p.m.", "AM", "PM", " AM", " PM")

    def sample(self, rng, held, allowed=None):
        style = rng.random()
        minute = rng.randint(0, 59) if rng.random() < 0.5 else pick(rng, (0, 0, 0, 15, 30, 30, 45, 5, 10, 20, 40, 50))
        if style < 0.25:
            h = rng.randint(0, 23)
            text = f"{h:02d}:{minute:02d}" if rng.random() < 0.5 else f"{h}:{minute:02d}"
        elif style < 0.85:
            h = rng.randint(1, 12)
            sep = ":" if rng.random() < 0.85 else "."
            suffix = pick(rng, self.SUFFIXES)
            if minute == 0 and rng.random() < 0.6:
                text = f"{h}" + (suffix if rng.random() < 0.85 else " o'clock")
            else:
                text = f"{h}{sep}{minute:02d}" + (suffix if sep == "." or rng.random() < 0.8 else "")
        elif style < 0.95:
            h = rng.randint(1, 12)
            text = pick(rng, ("noon", "midnight", "midday", f"half past {h}", f"quarter past {h}",
                              f"quarter to {h}"))
        else:
            text = f"{rng.randint(0, 23)}h{minute:02d}"
        return SlotValue(text)


MONTH_ABBREVIATIONS = [m[:3] for m in MONTHS]


def ordinal(n):
    """1st, 2nd, 3rd, 4th ... 21st, 22nd, 23rd."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _day_phrase(rng):
    """(text in the request, copied value): a date in one of many spellings, with its preposition
    ("on") when it takes one."""
    r = rng.random()
    if r < 0.18:
        d = pick(rng, ("today", "tomorrow", "tonight", "this evening", "this weekend", "tomorrow morning",
                       "tomorrow night", "this afternoon"))
        return d, d
    if r < 0.36:
        d = pick(rng, WEEKDAYS)
        return "on " + d, d
    if r < 0.48:
        d = pick(rng, ("next ", "this ")) + pick(rng, WEEKDAYS + ["week", "month"])
        return d, d
    month, day = rng.randint(1, 12), rng.randint(1, 28 if rng.random() < 0.5 else 31)
    day = min(day, (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1])
    year = rng.randint(2025, 2030)
    if r < 0.7:
        name = MONTHS[month - 1] if rng.random() < 0.7 else MONTH_ABBREVIATIONS[month - 1]
        num = str(day) if rng.random() < 0.6 else ordinal(day)
        d = f"{name} {num}" if rng.random() < 0.55 else f"{num} {name}"
        return "on " + d, d
    if r < 0.8:
        d = f"{year}-{month:02d}-{day:02d}"
        return "on " + d, d
    if r < 0.92:
        d = pick(rng, (f"{day}/{month}", f"{month}/{day}", f"{day:02d}/{month:02d}/{year}", f"{day}.{month}.{year}",
                       f"{month}-{day}-{year}"))
        return "on " + d, d
    d = f"in {rng.randint(2, 30)} " + pick(rng, ("days", "weeks"))
    return d, d


class Day:
    """A date, copied without its leading "on": "on Friday" -> "Friday", "tomorrow" -> "tomorrow".
    `{day:bare}` writes it without the preposition."""

    def sample(self, rng, held, allowed=None):
        text, copy = _day_phrase(rng)
        return SlotValue(text, copy=copy, alt={"bare": copy})


class When:
    """A date and/or time, copied without a leading "on" or "at": "tomorrow at 9:30",
    "Friday at 5pm", "7:45"."""

    def sample(self, rng, held, allowed=None):
        time = TimeOfDay().sample(rng, held).text
        r = rng.random()
        if r < 0.35:
            return SlotValue("at " + time, copy=time)
        day_text, day_copy = _day_phrase(rng)
        if r < 0.55:
            return SlotValue(day_text, copy=day_copy)
        return SlotValue(f"{day_text} at {time}", copy=f"{day_copy} at {time}")


# --- built values ----------------------------------------------------------------------------------
# Each builder makes one value from a lexicon (the word source's words or pseudo-words): build(rng,
# lex) -> text. Values never end with punctuation and hold no double quotes; free text may hold a
# comma (it is then always quoted).


def _digits(rng, n):
    return "".join(pick(rng, "0123456789") for _ in range(n))


def _capitals(rng, n):
    return "".join(pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(n))


def some_words(rng, lex, lo, hi):
    """lo..hi lowercase words of `lex`."""
    return " ".join(lex.word(rng) for _ in range(rng.randint(lo, hi)))


def cjk_name(rng):
    return pick(rng, CJK_SURNAMES) + "".join(pick(rng, CJK_GIVEN) for _ in range(rng.randint(1, 2)))


def cyrillic_name(rng):
    return cap("".join(CYRILLIC[c] for c in pseudo_word(rng)))


def person_name(rng, lex):
    """"Gonzalo", "Myron Sykes", "Draskel", "王芳", "Бразкел"."""
    r = rng.random()
    if r < 0.03:
        return cjk_name(rng)
    if r < 0.05:
        return cyrillic_name(rng)
    name = lex.name(rng)
    return name + " " + lex.name(rng) if rng.random() < 0.3 else name


def city_name(rng, lex):
    """"Leicester", "Port Gonzalo", "Flemwickville", "杭州"."""
    r = rng.random()
    if r < 0.03:
        return pick(rng, CJK_SURNAMES + CJK_GIVEN) + pick(rng, CJK_PLACE_ENDINGS)
    if r < 0.05:
        return cyrillic_name(rng)
    if r < 0.65:
        return lex.name(rng)
    return pick(rng, CITY_FORMS).format(N=lex.name(rng), M=lex.name(rng))


def place_name(rng, lex):
    """An address or a named place: "12 Myron Lane", "Gonzalo Station", "Thistle Market"."""
    n = str(log_uniform(rng, 1, 999))
    r = rng.random()
    if r < 0.35:
        return f"{n} {lex.name(rng)} {pick(rng, STREET_TYPES)}"
    if r < 0.45:
        return f"{lex.name(rng)} {pick(rng, STREET_TYPES)} {n}"
    if r < 0.65:
        return f"{lex.name(rng)} {pick(rng, PLACE_KINDS)}"
    if r < 0.8:
        return f"{cap(lex.word(rng))} {pick(rng, PLACE_KINDS)}"
    if r < 0.86:
        return f"{lex.name(rng)}straße {n}"
    if r < 0.9:
        return f"{pick(rng, ('Calle', 'Rue', 'Via'))} {lex.name(rng)} {n}"
    if r < 0.95:
        return f"{pick(rng, ('Terminal', 'Gate', 'Pier', 'Platform'))} {n}"
    return f"{lex.name(rng)} {pick(rng, STREET_TYPES)}"


def restaurant_name(rng, lex):
    r = rng.random()
    if r < 0.15:
        return f"{lex.name(rng)}'s"
    if r < 0.3:
        return f"The {cap(lex.word(rng))} {cap(lex.word(rng))}"
    if r < 0.4:
        return f"{pick(rng, ('Café', 'Chez', 'Casa', 'Bar'))} {lex.name(rng)}"
    if r < 0.75:
        return f"{pick(rng, (lex.name(rng), cap(lex.word(rng))))} {pick(rng, RESTAURANT_KINDS)}"
    if r < 0.85:
        return f"{cap(lex.word(rng))} {log_uniform(rng, 1, 99)}"
    return f"{cap(lex.word(rng))} & {cap(lex.word(rng))}"


def artist_name(rng, lex):
    r = rng.random()
    if r < 0.35:
        return f"{lex.name(rng)} {lex.name(rng)}"
    if r < 0.5:
        return f"The {cap(lex.word(rng))}"
    if r < 0.6:
        return f"{pick(rng, ('DJ', 'MC', 'Lil'))} {lex.name(rng)}"
    if r < 0.75:
        return lex.name(rng)
    if r < 0.9:
        return f"{cap(lex.word(rng))} {cap(lex.word(rng))}"
    return f"{lex.name(rng)} and the {cap(lex.word(rng))}"


def title_words(rng, lex, lo, hi):
    """lo..hi words in title case ("Copper Lantern Waltz")."""
    return " ".join(cap(lex.word(rng)) for _ in range(rng.randint(lo, hi)))


def song_title(rng, lex):
    r = rng.random()
    if r < 0.55:
        return title_words(rng, lex, 1, 4)
    if r < 0.7:
        return f"{cap(lex.word(rng))} in {lex.name(rng)}"
    if r < 0.85:
        return f"The {title_words(rng, lex, 1, 3)}"
    return f"{cap(lex.word(rng))} {log_uniform(rng, 1, 99)}"


def playlist_name(rng, lex):
    r = rng.random()
    if r < 0.5:
        return title_words(rng, lex, 1, 3)
    if r < 0.75:
        return f"{cap(lex.word(rng))} {pick(rng, ('Mix', 'Vibes', 'Hits', 'Beats', 'Sessions'))}"
    return f"{lex.name(rng)}'s {cap(lex.word(rng))}"


def genre_name(rng, lex):
    w = lex.word(rng)
    return pick(rng, (w, f"{w} {pick(rng, GENRE_WORDS)}", f"{w}core", f"neo-{w}", f"{w}wave", f"{w} {lex.word(rng)}"))


def show_name(rng, lex):
    return pick(rng, SHOW_FORMS).format(W=cap(lex.word(rng)), W2=cap(lex.word(rng)), N=lex.name(rng))


def company_name(rng, lex):
    r = rng.random()
    if r < 0.5:
        return f"{pick(rng, (lex.name(rng), cap(lex.word(rng))))} {pick(rng, COMPANY_SUFFIXES)}"
    if r < 0.65:
        return f"{lex.name(rng)} & {lex.name(rng)}"
    if r < 0.85:
        return lex.name(rng)
    return cap(lex.word(rng) + lex.word(rng, plain=True))


def ticker(rng, lex):
    return _capitals(rng, rng.randint(2, 5))


def event_title(rng, lex):
    r = rng.random()
    if r < 0.4:
        return cap(some_words(rng, lex, 1, 4))
    if r < 0.6:
        return f"{cap(lex.word(rng))} with {lex.name(rng)}"
    if r < 0.75:
        return f"{lex.name(rng)}'s {lex.word(rng)}"
    if r < 0.9:
        return f"{cap(lex.word(rng))} {lex.word(rng)} {log_uniform(rng, 1, 99)}"
    return title_words(rng, lex, 2, 3)


def short_label(rng, lex):
    """A timer's or an alarm's label: "quibble", "copper lantern", "batch 7", "Myron's bath"."""
    r = rng.random()
    if r < 0.45:
        return lex.word(rng)
    if r < 0.75:
        return some_words(rng, lex, 2, 3)
    if r < 0.88:
        return f"{lex.word(rng)} {log_uniform(rng, 1, 99)}"
    return f"{lex.name(rng)}'s {lex.word(rng)}"


def task_text(rng, lex):
    """Something to do, 2 to 7 words: "polish the lantern", "quibble 3 thistles for Myron"."""
    r = rng.random()
    if r < 0.3:
        return f"{lex.word(rng)} the {some_words(rng, lex, 1, 2)}"
    if r < 0.45:
        return f"{lex.word(rng)} my {lex.word(rng)}"
    if r < 0.6:
        return f"{lex.word(rng)} the {lex.word(rng)} for {lex.name(rng)}"
    if r < 0.7:
        return f"{lex.word(rng)} {log_uniform(rng, 2, 99)} {lex.word(rng)}"
    return some_words(rng, lex, 2, 7)


def message_text(rng, lex):
    """A message, 1 to 7 words, sometimes with a name, a number or a comma."""
    r = rng.random()
    if r < 0.55:
        return some_words(rng, lex, 1, 7)
    if r < 0.7:
        return f"{lex.name(rng)} {some_words(rng, lex, 1, 5)}"
    if r < 0.82:
        return f"{some_words(rng, lex, 1, 4)} {log_uniform(rng, 1, 9999)}"
    return f"{some_words(rng, lex, 1, 3)}, {some_words(rng, lex, 1, 3)}"


def subject_text(rng, lex):
    r = rng.random()
    if r < 0.6:
        return cap(some_words(rng, lex, 1, 5))
    if r < 0.8:
        return f"{cap(lex.word(rng))} for {lex.name(rng)}"
    return f"{cap(some_words(rng, lex, 1, 3))} {log_uniform(rng, 1, 999)}"


def note_text(rng, lex):
    r = rng.random()
    if r < 0.6:
        return some_words(rng, lex, 2, 7)
    if r < 0.8:
        return f"{some_words(rng, lex, 1, 3)} is {log_uniform(rng, 1, 9999)}"
    return f"{some_words(rng, lex, 1, 3)} for {lex.name(rng)}"


def search_text(rng, lex):
    r = rng.random()
    if r < 0.45:
        return some_words(rng, lex, 2, 7)
    if r < 0.6:
        w = lex.word(rng)
        return f"how to {lex.word(rng)} {'an' if w[:1] in 'aeiou' else 'a'} {w}"
    if r < 0.72:
        return f"best {lex.word(rng)} in {lex.name(rng)}"
    if r < 0.82:
        w = lex.word(rng)
        return f"what is {'an' if w[:1] in 'aeiou' else 'a'} {w}"
    if r < 0.9:
        return f"history of {lex.name(rng)}"
    return f"{lex.word(rng)} vs {lex.word(rng)}"


def phrase_text(rng, lex):
    return some_words(rng, lex, 2, 7)


def words_1_to_4(rng, lex):
    return some_words(rng, lex, 1, 4)


def item_name(rng, lex):
    r = rng.random()
    if r < 0.5:
        return lex.word(rng)
    if r < 0.8:
        return some_words(rng, lex, 2, 3)
    return f"{lex.name(rng)} {lex.word(rng)}"


def list_name(rng, lex):
    return some_words(rng, lex, 1, 2)


def note_title(rng, lex):
    return title_words(rng, lex, 1, 3)


def room_name(rng, lex):
    """"pantry room", "quibble", "Myron's room", "thistle loft"."""
    r = rng.random()
    if r < 0.4:
        return f"{lex.word(rng)} room"
    if r < 0.65:
        return lex.word(rng)
    if r < 0.8:
        return f"{lex.name(rng)}'s room"
    return f"{lex.word(rng)} {lex.word(rng)}"


def door_name(rng, lex):
    r = rng.random()
    if r < 0.55:
        return f"{lex.word(rng)} door"
    if r < 0.7:
        return f"{lex.word(rng)} {pick(rng, ('gate', 'entrance', 'hatch'))}"
    if r < 0.85:
        return f"{lex.name(rng)}'s door"
    return f"{lex.word(rng)} {lex.word(rng)} door"


def device_name(rng, lex):
    r = rng.random()
    if r < 0.6:
        return f"{lex.word(rng)} {pick(rng, DEVICE_NOUNS)}"
    return f"{lex.name(rng)}'s {pick(rng, DEVICE_NOUNS)}"


def colour_name(rng, lex):
    r = rng.random()
    if r < 0.5:
        return lex.word(rng)
    return f"{lex.word(rng)} {pick(rng, COLOURS)}"


def topic_name(rng, lex):
    r = rng.random()
    if r < 0.6:
        return some_words(rng, lex, 1, 3)
    return lex.name(rng)


def news_source(rng, lex):
    r = rng.random()
    if r < 0.5:
        return f"The {lex.name(rng)} {pick(rng, MASTHEADS)}"
    if r < 0.8:
        return f"{lex.name(rng)} {pick(rng, MASTHEADS)}"
    return f"{lex.name(rng)} Radio"


def activity_name(rng, lex):
    return pick(rng, (lex.word(rng), some_words(rng, lex, 2, 2), f"{lex.word(rng)} class"))


def dish_name(rng, lex):
    r = rng.random()
    if r < 0.4:
        return some_words(rng, lex, 1, 3)
    if r < 0.6:
        return f"{lex.name(rng)} {lex.word(rng)}"
    if r < 0.8:
        return f"{lex.word(rng)} with {lex.word(rng)}"
    return f"{lex.word(rng)} {pick(rng, ('pie', 'soup', 'stew', 'curry', 'salad', 'tart'))}"


def email_address(rng, lex):
    """Random local part and domain: "myron.sykes@thistle.io", "quibble42@flem-wick.com"."""
    r = rng.random()
    w = lambda: lex.word(rng, plain=True)  # noqa: E731
    if r < 0.35:
        local = f"{w()}.{w()}"
    elif r < 0.6:
        local = f"{w()}{rng.randint(1, 999)}"
    elif r < 0.75:
        local = f"{w()[:1]}.{w()}"
    elif r < 0.85:
        local = f"{w()}_{w()}"
    else:
        local = w()
    d = rng.random()
    domain = w() if d < 0.6 else f"{w()}-{w()}" if d < 0.8 else f"{w()}{w()}"
    return f"{local}@{domain}.{pick(rng, EMAIL_TLDS)}"


def phone_number(rng, lex):
    """A phone number in one of many national and international formats."""
    r = rng.random()
    if r < 0.15:
        return f"555-{_digits(rng, 4)}"
    if r < 0.3:
        return f"{rng.randint(200, 989)}-{_digits(rng, 3)}-{_digits(rng, 4)}"
    if r < 0.4:
        return f"({rng.randint(200, 989)}) {_digits(rng, 3)}-{_digits(rng, 4)}"
    if r < 0.65:
        groups = " ".join(_digits(rng, rng.randint(2, 4)) for _ in range(rng.randint(3, 4)))
        return f"+{rng.randint(1, 99)} {groups}"
    if r < 0.8:
        return f"0{_digits(rng, 4)} {_digits(rng, 6)}"
    if r < 0.9:
        return f"{rng.randint(200, 989)}.{_digits(rng, 3)}.{_digits(rng, 4)}"
    return f"+{rng.randint(1, 99)}{_digits(rng, rng.randint(8, 10))}"


def invented_value(rng, lex):
    """A value of an invented tool's string parameter: a word, a name, a code, a short phrase."""
    r = rng.random()
    if r < 0.3:
        return lex.word(rng)
    if r < 0.45:
        return lex.name(rng)
    if r < 0.6:
        return f"{_capitals(rng, rng.randint(1, 3))}-{log_uniform(rng, 1, 999)}"
    if r < 0.75:
        return f"{lex.word(rng)} {log_uniform(rng, 1, 99)}"
    return some_words(rng, lex, 2, 5)


def language_name(rng, lex):
    """A made-up language ("Flemwickish", "Draskelese")."""
    return cap(lex.word(rng, plain=True)) + pick(rng, ("ish", "ese", "ian", "i", "ic"))


def currency_code(rng, lex):
    return _capitals(rng, 3)


def carrier_name(rng, lex):
    return f"{lex.name(rng)} {pick(rng, ('Express', 'Post', 'Freight', 'Cargo'))}"


# --- templates ---------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")
_WORD = re.compile(r"[\w']+")
_QUOTE_TRIGGERS = set('?!.,;:"')


class Template:
    """A request template. `kind` is "imp" (an imperative clause: may take a polite prefix and may
    be joined to another clause) or "other" (a question or statement: used as it is)."""

    def __init__(self, text, kind, family, held):
        self.text = text
        self.kind = kind
        self.family = family
        self.held = held
        self.parts = []  # literal strings and (slot, modifier) pairs, in order
        pos = 0
        for m in _PLACEHOLDER.finditer(text):
            if m.start() > pos:
                self.parts.append(text[pos:m.start()])
            self.parts.append((m.group(1), m.group(2) or ""))
            pos = m.end()
        if pos < len(text):
            self.parts.append(text[pos:])
        # The slots in the order they first appear: values are drawn in this order, so the random
        # stream never depends on Python's string hashing (a set's iteration order does).
        self.slot_order = tuple(dict.fromkeys(p[0] for p in self.parts if isinstance(p, tuple)))
        self.slots = frozenset(self.slot_order)
        self.literals = [p for p in self.parts if isinstance(p, str)]
        last = self.parts[-1]
        # Ends with a slot: no polite suffix or full stop may follow (it could be read as part of it).
        self.ends_with_slot = isinstance(last, tuple)
        self.starts_with_slot = isinstance(self.parts[0], tuple)

    def key_fragment(self):
        """The template's longest literal piece, lowercased: held-out templates are recognised
        in requests by it (data.py checks that no training request contains one)."""
        return max((p.strip().lower() for p in self.literals), key=len, default="")

    def __repr__(self):
        return f"Template({self.family}: {self.text!r})"


_LITERAL_WORD = re.compile(r"[A-Za-z]{3,}")


def perturb_template(rng, template, lexicon, p_swap=0.25, p_drop=0.08, p_insert=0.15):
    """A copy of `template` with its own words perturbed (docs/training-data.md, "Perturbed
    phrasings"), or the template itself when nothing changed: each literal word of three letters or
    more is, independently, replaced by a word of `lexicon` (p_swap) or dropped (p_drop), and a word
    is inserted at the start of a literal piece with p_insert. The slots, the short words and the
    punctuation around them stay, so every value keeps the delimiters its template gives it. It
    teaches the model what a held-out phrasing needs: a request word it has never seen may be filler,
    and the tool follows from what is left (the slots, their values, the offered tools)."""
    changed = False
    parts = []
    for part in template.parts:
        if isinstance(part, tuple):
            name, mod = part
            parts.append("{" + name + (":" + mod if mod else "") + "}")
            continue
        text = part
        out, pos = [], 0
        for m in _LITERAL_WORD.finditer(text):
            out.append(text[pos:m.start()])
            r = rng.random()
            if r < p_swap:
                out.append(lexicon.word(rng, plain=True))
                changed = True
            elif r < p_swap + p_drop:
                changed = True
                if out and out[-1].endswith(" ") and text[m.end():m.end() + 1] == " ":
                    out[-1] = out[-1][:-1]  # one space where the word was
            else:
                out.append(m.group(0))
            pos = m.end()
        out.append(text[pos:])
        text = "".join(out)
        lead = len(text) - len(text.lstrip(" "))
        # (only where a word may start: at the template's start or after a space, never glued to a
        # value or before punctuation)
        if (lead or not parts) and text[lead:lead + 1].isalpha() and rng.random() < p_insert:
            text = text[:lead] + lexicon.word(rng, plain=True) + " " + text[lead:]
            changed = True
        parts.append(text)
    if not changed:
        return template
    text = re.sub(r" {2,}", " ", "".join(parts)).strip()
    if not text:
        return template
    perturbed = Template(text, template.kind, template.family, template.held)
    return perturbed if perturbed.slots == template.slots and perturbed.literals else template


def quote(rng, text):
    """Free text in quotes: straight double quotes mostly, sometimes single or curly ones."""
    r = rng.random()
    if r < 0.12 and "'" not in text:
        return f"'{text}'"
    if r < 0.2:
        return f"\u201c{text}\u201d"
    return f'"{text}"'


def render(template, values, rng, prefix="", suffix="", quote_p=0.3, force_quote=False):
    """The request text for `template` filled with `values` (slot -> SlotValue), between `prefix`
    and `suffix`, or None when a value that cannot be quoted would make the request ambiguous (the
    caller samples again).

    Free text is quoted with probability quote_p, always with the `q` modifier or force_quote, and
    whenever it is not delimited: when it contains quote-worthy punctuation or the word that follows
    it in the request (which may be in the suffix)."""
    pieces = []  # [text, slot value or None, quoted?]
    for part in [prefix] + template.parts + [suffix]:
        if part == "":
            continue
        if isinstance(part, str):
            pieces.append([part, None, False])
            continue
        name, mod = part
        sv = values[name]
        text = sv.alt.get(mod, sv.text) if (sv.alt and mod) else sv.text
        quoted = sv.free and (mod == "q" or force_quote or rng.random() < quote_p
                              or any(c in _QUOTE_TRIGGERS for c in sv.copy))
        pieces.append([text, sv, quoted])
    for i, (text, sv, quoted) in enumerate(pieces):
        if sv is None or quoted or not isinstance(sv.value, str) or sv.copy != text:
            continue
        rest = "".join(p[0] for p in pieces[i + 1:])
        follow = _WORD.match(rest.lstrip(" "))
        if rest[:1] in _QUOTE_TRIGGERS and rest[:1] in text:
            clash = True
        elif follow:
            clash = follow.group(0).lower() in {w.lower() for w in _WORD.findall(text)}
        else:
            clash = False
        if clash:
            if not sv.free:
                return None
            pieces[i][2] = True
    return "".join(quote(rng, text) if quoted else text for text, sv, quoted in pieces)
