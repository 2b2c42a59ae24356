"""More tool families for the training split only: data.py --more-families draws from them.

The 26 training families of families.py are the only intents a model trained on them has read in
natural requests; split B asks for six others. These 25 families (split "extra") widen what the
training split asks for, so that a model meets many more intents, each with its own tools, and must
read the tools it is offered rather than recognise 26 frames (docs/training-data.md, "More
families"). They never appear in the held-out splits, which stay those of the seed without them.

They are kept apart from families.FAMILIES on purpose: the data made without --more-families must
be the data made before they existed, byte for byte, so nothing here changes a list or set that the
other splits draw from (FAMILY_WORDS, the value rules' request words, the invented vocabulary).
Importing this module only adds their names to families.BY_NAME and their relations to the sets of
the families they name, which the generator reads by membership alone. In place of those lists:
- check(), at import: no split-B word anywhere in their material (check_b_words's rule), and no
  tool name of theirs with a word of wordlists.INVENTED_VERBS or INVENTED_NOUNS, so that an invented
  tool (a verb and a noun) never fits their requests;
- the generator rejects EXTRA_WORDS as open tool words when it draws from them (data.py).
Their enum and switch words (drinks, camera modes ...) are not among the value rules' request words,
so a built value may rarely contain one ("espresso"); the requests still say which tool they want.
"""

import families as F
import slots as S
import wordlists as W
from families import P, V, Family
from slots import Duration, Integer, Amount, SlotValue, Values, Word, pick

EXTRA_FAMILIES = []


def extra(name, **kwargs):
    f = Family(name, split="extra", **kwargs)
    EXTRA_FAMILIES.append(f)
    return f


# --- value lists and builders -------------------------------------------------------------------------

MOVIES = W.words("""
The Long Night|Paper Moons|Silver Harbor|Last Light|Northern Lights|The Quiet Field|Glass Houses|
Open Water|The Iron Road|Small Hours|Red Meadow|The Far Shore|Winter Garden|Borrowed Time|Blue Hour
""")
CINEMAS = W.words("Odeon Central|Rex Cinema|Plaza Theater|Roxy|the multiplex|Lumière|Electric Palace|Grand Cinema")
APPS = W.words("""
WhatsApp|Slack|Zoom|Firefox|Telegram|Signal|Kindle|Excel|Figma|Notion|Trello|Duolingo|Photoshop|
Chrome|Safari|Outlook|Teams|Discord|Evernote|Dropbox
""")
TEAMS = W.words("""
Lakers|Celtics|Yankees|Red Sox|Arsenal|Chelsea|Bayern|Real Madrid|Ajax|Juventus|Packers|Giants|
Bruins|Maple Leafs|Warriors|Dodgers|Liverpool|Barcelona|Benfica|Porto
""")
LEAGUES = ["NBA", "NFL", "NHL", "MLB", "MLS"]
MASCOTS = W.words("Hawks|Tigers|Rovers|Rangers|Falcons|Wolves|Comets|United|Athletic|Mariners|Lions")
TERMS = W.words("""
serendipity|ephemeral|ubiquitous|quixotic|laconic|obfuscate|petrichor|sonder|liminal|halcyon|
mellifluous|gregarious|pernicious|sanguine|taciturn|esoteric|ineffable|pragmatic|verbose|zenith
""")
ZONES = W.words("back lawn|front yard|vegetable beds|flower beds|side garden|rose bed|hedge row|herb patch")
DRINKS = ["espresso", "latte", "cappuccino", "americano", "flat white", "mocha"]
CUP_SIZES = ["small", "medium", "large"]
PET_NAMES = W.words("Biscuit|Luna|Milo|Bella|Oscar|Coco|Pepper|Ziggy|Nala|Rufus|Mochi|Tigger")
CAMERA_MODES = ["portrait", "panorama", "night", "selfie"]
VACUUM_MODES = ["quiet", "standard", "turbo"]
PLATFORMS = ["Twitter", "Mastodon", "Instagram", "Facebook", "LinkedIn", "Bluesky"]
PROVIDERS = W.words("Dr. Patel|Dr. Okafor|Dr. Lindqvist|Dr. Moreau|the dentist|the optician|the vet|Dr. Ito")
DEVICES = W.words("tablet|laptop|smartwatch|e-reader|work laptop|car keys|wallet tag|kid's tablet")
BOOKS = W.words("""
Middlemarch|The Hobbit|Dune|Beloved|Persuasion|Ulysses|Emma|Rebecca|The Road|Atonement|Frankenstein|
Dracula|Kindred|Solaris|Possession
""")
BILLERS = W.words("City Power|Northwind Water|Metro Gas|Fibrelink|Comcast|Thames Water|EDF|Verizon")
BILLER_KINDS = W.words("Energy|Water|Gas|Telecom|Broadband|Electric|Mobile")


def team_name(rng, lex):
    return f"{lex.name(rng)} {pick(rng, MASCOTS)}"


def zone_name(rng, lex):
    return f"{lex.word(rng)} {pick(rng, ('bed', 'lawn', 'border', 'patch', 'strip'))}"


def pet_name(rng, lex):
    return lex.name(rng)


def provider_name(rng, lex):
    return f"Dr. {lex.name(rng)}"


def device_name(rng, lex):
    return f"{lex.name(rng)}'s {pick(rng, ('tablet', 'laptop', 'smartwatch', 'e-reader'))}"


def biller_name(rng, lex):
    return f"{S.cap(lex.word(rng))} {pick(rng, BILLER_KINDS)}"


def app_name(rng, lex):
    return S.cap(lex.word(rng)) + pick(rng, ("", "ly", "Hub", "", " Pro"))


def one_word(rng, lex):
    return lex.word(rng)


def parking_zone(rng, lex):
    return f"{pick(rng, 'ABCDEFGHKMNPRSTZ')}{rng.randint(1, 999)}"


def expression(rng, lex):
    """An arithmetic expression as a user types it: "37 * 12", "1250 / 5", "18% of 240"."""
    a, b = rng.randint(2, 2000), rng.randint(2, 99)
    r = rng.random()
    if r < 0.2:
        return f"{b}% of {a}"
    if r < 0.35:
        return f"{a} + {b} + {rng.randint(2, 99)}"
    return f"{a} {pick(rng, ('*', '/', '+', '-', 'x'))} {b}"


class Built:
    """A value made by `build(rng, None)` alone (no words), that passes the value rules (no held-out
    value of split A, retried up to 50 times)."""

    def __init__(self, build):
        self.build = build

    def sample(self, rng, held, allowed=None):
        for _ in range(50):
            text = self.build(rng, None)
            if S.RULES.allows(text, held):
                return SlotValue(text)
        raise S.Unfillable("no value passes the value rules in 50 draws")


ROOMS, PERSON, PLACES, CITIES, MESSAGES = F.ROOMS, F.PERSON, F.PLACES, F.CITIES, F.MESSAGES
POWER, DAY, TIME = F.POWER, F.DAY, F.TIME


def kept(items, build, free=False):
    """A copied value with no held-out part: these lists never reach split A."""
    return Values(items, build, free=free, holdout=False)


# --- devices and the home --------------------------------------------------------------------------------

extra(
    "tv_channel", near=("volume",),
    slots={"ch": Integer(1, 999, words_p=0, log=True), "room": ROOMS},
    variants=[
        V("set_tv_channel", "Switch the TV to a channel.", P("channel", "integer", "ch", req=True)),
        V("tv.switch_channel", "Switch the television channel.", P("number", "integer", "ch", req=True), P("room", "string", "room")),
        V("changeChannel", "Changes the TV channel.", P("channelNumber", "integer", "ch", req=True)),
    ],
    imp=["switch the TV to channel {ch}", "put on channel {ch}", "change the channel to {ch}",
         "tune the TV in the {room} to channel {ch}", "go to channel {ch} on the television",
         "flip the {room} TV over to channel {ch}"],
    other=["can you switch to channel {ch}?", "channel {ch} please", "I want to watch channel {ch} in the {room}"],
)

extra(
    "wifi", near=("bluetooth",),
    slots={"power": POWER},
    variants=[
        V("set_wifi", "Turn Wi-Fi on or off.", P("enabled", "boolean", "power", req=True)),
        V("wifi.toggle", "Toggle the wireless network.",
          P("state", "string", "power", req=True, enum=["on", "off"], conv="flag_enum")),
        V("setWirelessRadio", "Switches the Wi-Fi radio.", P("on", "boolean", "power", req=True)),
    ],
    imp=["turn {power} the wifi", "switch wifi {power}", "turn {power} wi-fi", "{power:en} wifi",
         "{power:en} the wireless network", "switch the Wi-Fi {power}"],
    other=["can you turn the wifi {power}?", "wifi {power} please"],
)

extra(
    "bluetooth", near=("wifi",),
    slots={"power": POWER},
    variants=[
        V("set_bluetooth", "Turn Bluetooth on or off.", P("enabled", "boolean", "power", req=True)),
        V("bluetooth.power", "Bluetooth radio power.",
          P("state", "string", "power", req=True, enum=["ON", "OFF"], conv="flag_enum")),
        V("toggleBluetooth", "Switches Bluetooth.", P("active", "boolean", "power", req=True)),
    ],
    imp=["turn {power} bluetooth", "switch bluetooth {power}", "{power:en} bluetooth",
         "turn bluetooth {power} on my phone"],
    other=["can you switch bluetooth {power}?", "bluetooth {power}, thanks"],
)

extra(
    "flashlight",
    slots={"power": POWER},
    variants=[
        V("toggle_flashlight", "Turn the flashlight on or off.", P("on", "boolean", "power", req=True)),
        V("torch.set", "Set the torch.", P("state", "string", "power", req=True, enum=["on", "off"],
                                           conv="flag_enum")),
        V("setFlashlight", "Sets the phone's flashlight.", P("enabled", "boolean", "power", req=True)),
    ],
    imp=["turn {power} the flashlight", "switch the torch {power}", "{power:en} the flashlight",
         "turn the torch {power}", "switch {power} my flashlight"],
    other=["flashlight {power}", "can you turn {power} my torch?", "it's dark, flashlight {power} please"],
)

extra(
    "battery_saver",
    slots={"power": POWER},
    variants=[
        V("set_battery_saver", "Turn battery saver on or off.", P("enabled", "boolean", "power", req=True)),
        V("power.saving_mode", "Low power mode.", P("state", "string", "power", req=True, enum=["on", "off"],
                                                   conv="flag_enum")),
        V("setLowPowerMode", "Sets low power mode.", P("on", "boolean", "power", req=True)),
    ],
    imp=["turn {power} battery saver", "switch low power mode {power}", "{power:en} battery saver",
         "{power:en} power saving mode", "turn {power} low power mode"],
    other=["battery saver {power} please", "can you turn {power} low power mode?"],
)

extra(
    "robot_vacuum",
    slots={"room": ROOMS, "mode": Word(VACUUM_MODES)},
    variants=[
        V("start_vacuum", "Start the robot vacuum.", P("room", "string", "room")),
        V("vacuum.clean", "Send the cleaner to a room.", P("area", "string", "room", req=True),
          P("mode", "string", "mode", enum=VACUUM_MODES)),
        V("runRoboVac", "Runs the vacuum.", P("room", "string", "room"),
          P("suction", "string", "mode", enum=[m.upper() for m in VACUUM_MODES])),
    ],
    imp=["vacuum the {room}", "start the vacuum", "run the vacuum in the {room}",
         "send the vacuum to the {room} on {mode} mode", "vacuum the {room} in {mode} mode",
         "start vacuuming the {room}"],
    other=["can the vacuum do the {room}?", "the {room} floor needs vacuuming", "vacuum in {mode} mode please"],
)

extra(
    "sprinklers",
    slots={"zone": kept(ZONES, zone_name), "dur": Duration({"minute": (5, 120)}, {"hour": (1, 2)})},
    variants=[
        V("run_sprinklers", "Run the garden sprinklers.", P("zone", "string", "zone", req=True),
          P("minutes", "integer", "dur", conv="dur_m")),
        V("irrigation.start", "Start irrigation for a zone.", P("area", "string", "zone", req=True),
          P("duration_minutes", "integer", "dur", req=True, conv="dur_m")),
        V("startSprinkler", "Turns on a sprinkler zone.", P("zoneName", "string", "zone", req=True)),
    ],
    imp=["run the sprinklers in the {zone} for {dur}", "turn on the sprinkler in the {zone}",
         "start the {zone} sprinklers", "irrigate the {zone} for {dur}", "run the {zone} sprinkler"],
    other=["the {zone} needs the sprinklers for {dur}", "can you run the sprinklers in the {zone}?"],
)

extra(
    "coffee",
    slots={"drink": Word(DRINKS), "size": Word(CUP_SIZES), "cups": Integer(2, 6)},
    variants=[
        V("make_coffee", "Make a coffee on the machine.", P("drink", "string", "drink", req=True, enum=DRINKS),
          P("size", "string", "size", enum=CUP_SIZES)),
        V("coffee_machine.start", "Start the coffee maker.", P("beverage", "string", "drink", req=True)),
        V("prepareCoffee", "Prepares a hot drink.", P("type", "string", "drink", req=True),
          P("cups", "integer", "cups")),
    ],
    imp=["make me a {drink}", "make a {size} {drink}", "start the coffee machine for a {drink}",
         "prepare {cups} cups of {drink}", "get the machine going on a {size} {drink}"],
    other=["could I get a {size} {drink} from the machine?", "I'd love a {drink}", "{cups} {drink}s please"],
)

extra(
    "pet_feeder",
    slots={"portions": Integer(1, 6), "pet": kept(PET_NAMES, pet_name)},
    variants=[
        V("dispense_pet_food", "Dispense food from the pet feeder.",
          P("portions", "integer", "portions", req=True)),
        V("petfeeder.serve", "Serve a meal to a pet.", P("pet", "string", "pet", req=True),
          P("cups", "integer", "portions")),
        V("feederDispense", "Drops portions into the bowl.", P("amount", "integer", "portions", req=True),
          P("petName", "string", "pet")),
    ],
    imp=["give {pet} {portions} portions from the feeder", "dispense {portions} portions of pet food",
         "put {portions} scoops in {pet}'s bowl", "serve {pet} dinner from the feeder"],
    other=["{pet} is hungry, dispense {portions} portions", "can the feeder give {pet} some food?"],
)

extra(
    "camera",
    slots={"mode": Word(CAMERA_MODES), "delay": Integer(2, 10)},
    variants=[
        V("take_photo", "Take a photo with the camera.", P("mode", "string", "mode", enum=CAMERA_MODES),
          P("delay_seconds", "integer", "delay")),
        V("camera.capture", "Capture a picture.", P("self_timer", "integer", "delay", desc="Delay in seconds")),
        V("snapPicture", "Snaps a picture.", P("cameraMode", "string", "mode")),
    ],
    imp=["take a photo", "take a {mode} photo", "take a picture in {mode} mode", "snap a photo in {delay} seconds",
         "take a photo with a {delay} second delay"],
    other=["can you take a picture?", "I want a {mode} shot", "photo in {delay} seconds please"],
)

extra(
    "car_start", near=("thermostat",),
    slots={"dur": Duration({"minute": (5, 30)}, {"hour": (1, 1)}), "temp": Integer(16, 28, words_p=0)},
    variants=[
        V("start_car", "Start the car's engine remotely.", P("warm_up_minutes", "integer", "dur", conv="dur_m")),
        V("vehicle.remote_start", "Remote-start the vehicle.", P("climate_temp", "integer", "temp",
                                                                  desc="Cabin temperature in Celsius")),
        V("startEngine", "Starts the engine of your car.", P("minutes", "integer", "dur", conv="dur_m")),
    ],
    imp=["start the car", "remote start my car", "start the car for {dur}", "start my car and warm it to {temp} degrees",
         "get the car engine running for {dur}"],
    other=["can you start the car?", "it's cold, start my car and set the cabin to {temp} degrees"],
)

# --- people, places, things to do ------------------------------------------------------------------------

extra(
    "contacts", near=("phone_call", "message"),
    slots={"person": PERSON, "number": Values(W.PHONE_NUMBERS, S.phone_number),
           "mail": Values(W.EMAIL_ADDRESSES, S.email_address)},
    variants=[
        V("add_contact", "Save a new contact.", P("name", "string", "person", req=True),
          P("phone", "string", "number")),
        V("contacts.create", "Create an address book entry.", P("full_name", "string", "person", req=True),
          P("phone_number", "string", "number"), P("email", "string", "mail")),
        V("saveContact", "Saves a person to contacts.", P("displayName", "string", "person", req=True),
          P("number", "string", "number", req=True)),
    ],
    imp=["add {person} to my contacts", "save {number} as {person}", "create a contact for {person} with the number {number}",
         "add {person} to my address book with email {mail}", "store {person}, {number}, in my contacts"],
    other=["new contact: {person}, {number}", "can you save {person} as a contact? the number is {number}"],
)

extra(
    "movie_tickets",
    slots={"movie": kept(MOVIES, S.song_title), "count": Integer(1, 12), "time": TIME,
           "cinema": kept(CINEMAS, S.place_name)},
    variants=[
        V("buy_movie_tickets", "Buy cinema tickets.", P("movie", "string", "movie", req=True),
          P("tickets", "integer", "count"), P("showtime", "string", "time")),
        V("cinema.book", "Book seats for a film.", P("film", "string", "movie", req=True),
          P("seats", "integer", "count", req=True)),
        V("reserveMovieSeats", "Reserves seats at the cinema.", P("title", "string", "movie", req=True),
          P("quantity", "integer", "count"), P("theater", "string", "cinema")),
    ],
    imp=["get me {count} tickets for {movie}", "book {count} seats for {movie} at {time}", "buy tickets for {movie}",
         "reserve {count} seats for {movie} at {cinema}", "book the {time} showing of {movie}"],
    other=["can I get {count} tickets to see {movie}?", "I'd like to see {movie} at {time}, {count} tickets"],
)

extra(
    "parking", near=("navigation",),
    slots={"place": PLACES, "zone": Built(parking_zone), "hrs": Integer(2, 12)},
    variants=[
        V("find_parking", "Find a parking spot near a place.", P("near", "string", "place", req=True)),
        V("parking.pay", "Pay for parking in a zone.", P("zone", "string", "zone", req=True),
          P("hours", "integer", "hrs")),
        V("startParkingSession", "Starts a paid parking session.", P("zoneCode", "string", "zone", req=True),
          P("durationHours", "integer", "hrs", req=True)),
    ],
    imp=["find parking near {place}", "find me a parking spot near {place}", "pay for parking in zone {zone}",
         "pay for {hrs} hours of parking in zone {zone}", "start parking in zone {zone} for {hrs} hours"],
    other=["where can I park near {place}?", "I parked in zone {zone}, pay for {hrs} hours"],
)

extra(
    "sports_scores", conflicts=("web_search", "news"),
    slots={"team": kept(TEAMS, team_name), "league": Word(LEAGUES)},
    variants=[
        V("get_match_result", "Latest result for a team.", P("team", "string", "team", req=True)),
        V("sports.results", "Recent results in a league.", P("league", "string", "league", req=True, enum=LEAGUES),
          P("team", "string", "team")),
        V("fetchGameResult", "Fetches the result of a team's last game.", P("teamName", "string", "team", req=True)),
    ],
    imp=["get the score of the {team} game", "show me the {team} score", "check how the {team} did",
         "show {league} results", "get the latest {league} score for the {team}"],
    other=["did the {team} win?", "what was the score in the {team} game?", "how are the {team} doing in the {league}?"],
)

extra(
    "dictionary", conflicts=("web_search", "translate"),
    slots={"term": kept(TERMS, one_word)},
    variants=[
        V("define_word", "Look up a word's definition.", P("word", "string", "term", req=True)),
        V("dictionary.lookup", "Dictionary entry for a term.", P("term", "string", "term", req=True)),
        V("getDefinition", "Gets the meaning of a word.", P("query", "string", "term", req=True)),
    ],
    imp=["define {term}", "look up {term} in the dictionary", "give me the definition of {term}",
         "find the meaning of the word {term}"],
    other=["what does {term} mean?", "what's the definition of {term}?", "meaning of {term}?"],
)

extra(
    "calculator", conflicts=("web_search", "unit_convert", "currency_convert"),
    slots={"expr": Built(expression)},
    variants=[
        V("calculate", "Evaluate a math expression.", P("expression", "string", "expr", req=True)),
        V("math.eval", "Compute an arithmetic result.", P("expr", "string", "expr", req=True)),
        V("computeExpression", "Computes a formula.", P("formula", "string", "expr", req=True)),
    ],
    imp=["calculate {expr}", "work out {expr}", "compute {expr}", "do the math on {expr}"],
    other=["how much is {expr}?", "what's {expr}?", "can you do {expr} for me?"],
)

extra(
    "open_app",
    slots={"app": kept(APPS, app_name)},
    variants=[
        V("open_app", "Open an app on the phone.", P("app_name", "string", "app", req=True)),
        V("apps.open", "Open an application.", P("name", "string", "app", req=True)),
        V("startApplication", "Starts an application by name.", P("appName", "string", "app", req=True)),
    ],
    imp=["open {app}", "open the {app} app", "start {app}", "bring up {app}", "fire up the {app} app"],
    other=["can you open {app}?", "I need {app} open"],
)

extra(
    "social_post", near=("message",),
    slots={"text": MESSAGES, "platform": Word(PLATFORMS)},
    variants=[
        V("post_status", "Post a status update.", P("text", "string", "text", req=True),
          P("platform", "string", "platform")),
        V("social.publish", "Publish a post on social media.", P("content", "string", "text", req=True),
          P("network", "string", "platform", enum=PLATFORMS)),
        V("shareUpdate", "Posts an update for followers.", P("message", "string", "text", req=True)),
    ],
    imp=["post {text} on {platform}", "share {text} with my followers", "publish a post saying {text}",
         "update my status to {text}", "post on {platform}: {text}"],
    other=["can you post {text} to {platform}?"],
)

extra(
    "appointment", near=("calendar_event", "reminder"),
    slots={"doc": kept(PROVIDERS, provider_name), "day": DAY, "time": TIME},
    variants=[
        V("book_appointment", "Book an appointment.", P("provider", "string", "doc", req=True),
          P("date", "string", "day"), P("time", "string", "time")),
        V("appointments.schedule", "Schedule a visit.", P("with", "string", "doc", req=True),
          P("day", "string", "day", req=True)),
        V("makeAppointment", "Makes an appointment with a practitioner.",
          P("practitioner", "string", "doc", req=True), P("when", "string", "time")),
    ],
    imp=["book an appointment with {doc} {day}", "book me in with {doc} {day} at {time}",
         "make an appointment with {doc} at {time}", "schedule a visit to {doc} {day}"],
    other=["can I see {doc} {day}?", "I need an appointment with {doc} {day} at {time}"],
)

extra(
    "world_clock", near=("weather",), conflicts=("web_search",),
    slots={"city": CITIES},
    variants=[
        V("get_local_time", "Current time in a city.", P("city", "string", "city", req=True)),
        V("clock.world", "World clock lookup.", P("location", "string", "city", req=True)),
        V("timeIn", "Gets the time in a place.", P("place", "string", "city", req=True)),
    ],
    imp=["show the time in {city}", "check the local time in {city}", "get the current time in {city}",
         "tell me the time in {city}"],
    other=["what time is it in {city}?", "what's the time in {city} right now?", "is it late in {city}?"],
)

extra(
    "review", near=("restaurant",),
    slots={"place": PLACES, "stars": Integer(1, 5), "text": MESSAGES},
    variants=[
        V("leave_review", "Review a place.", P("place", "string", "place", req=True),
          P("stars", "integer", "stars", req=True), P("comment", "string", "text")),
        V("reviews.post", "Post a star rating.", P("venue", "string", "place", req=True),
          P("rating", "integer", "stars", req=True)),
        V("ratePlace", "Rates a place from 1 to 5.", P("name", "string", "place", req=True),
          P("score", "integer", "stars")),
    ],
    imp=["give {place} {stars} stars", "rate {place} {stars} out of 5", "leave a {stars} star review for {place}",
         "review {place}: {stars} stars, {text}"],
    other=["{place} deserves {stars} stars", "can you rate {place} {stars} stars?"],
)

extra(
    "find_device",
    slots={"device": kept(DEVICES, device_name)},
    variants=[
        V("ring_device", "Ring a lost device.", P("device", "string", "device", req=True)),
        V("finder.locate", "Locate a device on the map.", P("device_name", "string", "device", req=True)),
        V("playSoundOnDevice", "Plays a sound on a device to find it.", P("deviceName", "string", "device", req=True)),
    ],
    imp=["ring my {device}", "find my {device}", "make my {device} beep", "locate my {device}"],
    other=["I lost my {device}, can you ring it?", "help me find my {device}"],
)

extra(
    "library",
    slots={"book": kept(BOOKS, S.song_title), "weeks": Integer(1, 6)},
    variants=[
        V("renew_library_book", "Renew a borrowed library book.", P("title", "string", "book", req=True)),
        V("library.renew", "Extend a loan.", P("book_title", "string", "book", req=True),
          P("weeks", "integer", "weeks")),
        V("extendLoan", "Extends the loan of a book.", P("book", "string", "book", req=True)),
    ],
    imp=["renew {book} at the library", "renew my library book {book}", "extend the loan on {book} by {weeks} weeks",
         "renew {book} for {weeks} more weeks"],
    other=["can you renew {book}?", "I need {book} for {weeks} more weeks"],
)

extra(
    "bill_pay", near=("payment",),
    slots={"biller": kept(BILLERS, biller_name), "amount": Amount(5, 900)},
    variants=[
        V("pay_bill", "Pay a bill.", P("biller", "string", "biller", req=True), P("amount", "number", "amount")),
        V("bills.pay", "Pay a utility bill.", P("payee", "string", "biller", req=True),
          P("amount", "number", "amount", req=True)),
        V("payInvoice", "Pays an invoice.", P("vendor", "string", "biller", req=True), P("total", "number", "amount")),
    ],
    imp=["pay the {biller} bill", "pay my {biller} bill of {amount}", "settle the {biller} invoice for {amount}",
         "pay {amount} on the {biller} bill"],
    other=["the {biller} bill is due, can you pay it?", "I owe {biller} {amount} on my bill"],
)

# --- indexes and checks -------------------------------------------------------------------------------

EXTRA_BY_NAME = {f.name: f for f in EXTRA_FAMILIES}


def extra_words():
    """Words of the extra families' names and tool names: no invented or renamed tool may take one."""
    out = set()
    for f in EXTRA_FAMILIES:
        out.update(F.name_words(f.name))
        for v in f.variants:
            out.update(F.name_words(v.name))
    return out


EXTRA_WORDS = extra_words() | set("""tv television channel wifi wireless bluetooth flashlight torch battery
vacuum sprinkler sprinklers irrigate coffee espresso feeder pet photo picture camera car engine contact
contacts movie cinema tickets parking park result dictionary definition calculate app status post appointment
clock review rate device library book bill invoice""".split())


def check():
    """No split-B word in the extra families' material, no clash with the invented tools' words, and
    no family or tool name that the 32 families already use; raises with every offender."""
    invented = set(W.INVENTED_VERBS) | set(W.INVENTED_NOUNS)
    family_names = {g.name for g in F.FAMILIES}
    tool_names = {v.name for g in F.FAMILIES for v in g.variants}  # split B's included
    problems = []
    for f in EXTRA_FAMILIES:
        if f.name in family_names:
            problems.append(f"extra family {f.name}: the name is a family's already")
        texts = [t.text for t in f.templates] + [v.name for v in f.variants]
        texts += [d for v in f.variants for d in v.descs] + [p.name for v in f.variants for p in v.params]
        for kind in f.slots.values():
            texts += [str(x) for attr in ("train", "items") for x in getattr(kind, attr, [])]
        for text in texts:
            bad = F.words_in(text) & F.B_WORDS
            if bad:
                problems.append(f"extra family {f.name}: split-B word {sorted(bad)[0]!r} in {text!r}")
        for v in f.variants:
            if v.name in tool_names:
                problems.append(f"extra family {f.name}: tool {v.name} is a family's already")
            clash = set(F.name_words(v.name)) & invented
            if clash:
                problems.append(f"extra family {f.name}: tool {v.name} uses the invented word {sorted(clash)[0]!r}")
    if problems:
        raise ValueError("more_families: " + "; ".join(problems))


check()

# Register them by name, and make relations symmetric: a base family gains the extra family's name
# in its near and conflict sets, which the generator only ever tests for membership against the
# families a split draws from, so the data made without --more-families does not change.
F.BY_NAME.update(EXTRA_BY_NAME)
for _f in EXTRA_FAMILIES:
    for _g in list(_f.near):
        F.BY_NAME[_g].near.add(_f.name)
    for _g in list(_f.conflicts):
        F.BY_NAME[_g].conflicts.add(_f.name)
