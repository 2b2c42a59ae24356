"""Composed small talk: lines of conversation that ask for nothing, for the training split's []
requests (data.py --small-talk).

The fixed list wordlists.CHITCHAT has 45 lines, 36 of them for training; a model trained on those
alone learns the 36 lines, not small talk: on the held-out nine ("cheers mate", "are you a robot?")
it calls whichever tool is offered. compose() builds a line from one or two moves of a conversation
(a greeting, thanks, a feeling, a question about the assistant, a liking, an exclamation, a
goodbye), each from its own phrases, so that the lines number in the tens of thousands and share
no request's shape: no verb a tool is asked with, no time, place, amount or name to copy.

None of the held-out lines' frames is used (who made you, do you like ..., what do you think
about ..., that's all, cheers, robot, feelings, dream): tests/train/test_data.py checks that no
composed line contains one of them.
"""

from slots import pick, weighted

COMPOSED = 0.75  # the share of data.py --small-talk's lines that compose() makes (the rest: the fixed list)

GREETINGS = ["hi", "hey", "hello", "good morning", "good afternoon", "good evening", "morning", "hiya",
             "howdy", "yo", "hey hey", "greetings", "hi again", "hello again", "hola", "salut", "ciao",
             "guten Tag", "olá", "bonjour"]
ADDRESSEES = ["there", "friend", "buddy", "pal", "assistant", "you", "everyone", "my friend"]
HOW_ARE_YOU = ["how's it going?", "how are things?", "how have you been?", "long time no see",
               "nice to meet you", "what's new?", "how's your day going?", "you doing okay?",
               "how's life?", "all good?"]
THANKS = ["thanks", "thank you", "thanks a lot", "thanks so much", "many thanks", "much appreciated",
          "thank you kindly", "ta", "merci", "danke", "gracias", "thx"]
THANKS_FOR = ["for your help", "for that", "again", "anyway", "for everything", "for listening"]
ACKS = ["ok", "okay", "got it", "sounds good", "fair enough", "perfect", "great", "awesome", "lovely",
        "nice one", "alright", "sure", "makes sense", "understood", "noted", "cool cool", "right",
        "no worries", "all good", "good to know"]
INTENSIFIERS = ["so", "really", "a little", "quite", "very", "kind of", "super", "a bit", "pretty"]
MOODS = ["happy", "sad", "sleepy", "stressed", "bored", "great", "nervous", "grumpy",
         "cheerful", "calm", "lonely", "relaxed", "anxious", "proud", "confused", "lazy", "curious",
         "motivated", "cosy"]
WHEN = ["today", "this morning", "right now", "lately", "tonight", "this week", "at the moment"]
ABOUT_YOU = ["are you bored?", "are you busy?", "are you happy?", "do you ever get tired?",
             "what's your name?", "where do you live?", "can you hear me?", "what are you exactly?",
             "how do you work?", "are you smart?", "what can you do?", "are you listening?",
             "do you sleep?", "do you get lonely?", "are you real?", "how clever are you?",
             "what languages do you speak?", "is anyone there?", "are you still there?",
             "do you know any good stories?", "what's your favourite season?", "are you a person?",
             "do you enjoy your work?", "can we talk?"]
LIKING = ["love", "like", "enjoy", "miss", "hate", "can't stand", "adore", "am not a fan of"]
LIKED = ["autumn", "Sundays", "long walks", "the sea", "snow", "old films", "sunsets", "puzzles",
         "thunderstorms", "the smell of rain", "quiet mornings", "board games", "my garden", "birds",
         "my neighbours", "winter", "crosswords", "poetry", "the mountains", "spring", "Fridays",
         "my old bike", "fireworks", "maths", "libraries"]
EXCLAMATIONS = ["haha", "lol", "wow", "hmm", "oh no", "oops", "yikes", "whatever", "meh", "ugh", "nice",
                "interesting", "really?", "no way", "seriously?", "oh well", "hehe", "aw", "bravo",
                "oh dear", "hah, good one", "well well", "huh", "phew"]
REMARKS = ["that's great", "that's a shame", "that's so cool", "I see", "you're kind", "you're clever",
           "you made my day", "I was just thinking", "I'm just browsing", "nothing important",
           "just testing", "I'm only curious", "I'm not sure", "that's weird", "what a day",
           "it's been a while", "I'm in a good mood", "life is strange", "I'm home", "I'm at work",
           "you're patient", "I appreciate you", "we'll see", "let me think"]
GOODBYES = ["bye", "goodbye", "see you later", "talk soon", "catch you later", "good night", "see ya",
            "I'm off", "gotta go", "take care", "bye bye", "later", "adios", "ciao for now",
            "until next time", "sleep well"]
PUNCT = ["", "!", ".", "!!", "..."]


def greeting(rng):
    line = pick(rng, GREETINGS)
    if rng.random() < 0.4:
        line += " " + pick(rng, ADDRESSEES)
    if rng.random() < 0.4:
        line += pick(rng, [", ", "! ", ". "]) + pick(rng, HOW_ARE_YOU)
    return line


def thanks(rng):
    if rng.random() < 0.3:
        return pick(rng, ACKS)
    line = pick(rng, THANKS)
    if rng.random() < 0.4:
        line += " " + pick(rng, THANKS_FOR)
    return line


def feeling(rng):
    line = pick(rng, ["I'm", "I am", "I feel", "feeling", "I'm feeling", "honestly I'm"])
    if rng.random() < 0.6:
        line += " " + pick(rng, INTENSIFIERS)
    line += " " + pick(rng, MOODS)
    if rng.random() < 0.4:
        line += " " + pick(rng, WHEN)
    return line


def liking(rng):
    return pick(rng, ["I", "I really", "I kind of", "honestly I", "my sister says I"]) + " " + \
        pick(rng, LIKING) + " " + pick(rng, LIKED)


def remark(rng):
    return pick(rng, EXCLAMATIONS) if rng.random() < 0.5 else pick(rng, REMARKS)


MOVES = [(greeting, 20), (thanks, 18), (feeling, 14), (lambda rng: pick(rng, ABOUT_YOU), 16),
         (liking, 10), (remark, 14), (lambda rng: pick(rng, GOODBYES), 8)]
_FIRST = MOVES[:-1]   # a goodbye only ends a line
_SECOND = MOVES[1:]   # a greeting only starts one


def _move(rng, moves):
    return weighted(rng, [f for f, _ in moves], [w for _, w in moves])(rng)


def compose(rng):
    """One line of small talk: one move, or two joined ("hey there, I'm a bit sleepy today"; a
    greeting only first, a goodbye only last), its first letter upper case six times in ten,
    ending in a mark (or none) unless it is a question."""
    if rng.random() >= 0.35:
        parts = [_move(rng, MOVES)]
    else:
        parts = [_move(rng, _FIRST), _move(rng, _SECOND)]
        if parts[1] == parts[0]:
            parts.pop()
    line = parts[0]
    if len(parts) == 2:
        line += ("" if line[-1] in "?.!" else pick(rng, [",", ".", "!", " -"])) + " " + parts[1]
    if not line.endswith("?"):
        line += pick(rng, PUNCT)
    if rng.random() < 0.6:
        line = line[:1].upper() + line[1:]
    return line
