"""Word and value lists for the training-data generator (docs/training-data.md).

Every list is plain data. `split_values` divides a list into the values that training may use and the
values held out for split A ("new values"): the item at index i is held out when i % 5 == 2, so the
holdout is fixed by the lists themselves, not by the seed.

Values are written so that copying them out of a request is unambiguous: no leading article, no
trailing punctuation, no double quotes, and none of the words that the families of split B use
(families.B_WORDS; checked when families.py is imported).

The curated lists are one of three sources of copied values (slots.Values): most values are built
from the word source (Debian's wamerican word list, WORD_SOURCE) and from pseudo-words, with the
material at the end of this file (street types, company suffixes, CJK characters ...).
"""

import hashlib
import os
import re


def words(text):
    """A list from a '|'-separated block (newlines and surrounding spaces ignored)."""
    return [w.strip() for w in text.replace("\n", "|").split("|") if w.strip()]


def split_values(items):
    """(train, held): every fifth item, starting at index 2, is held out for split A."""
    train = [v for i, v in enumerate(items) if i % 5 != 2]
    held = [v for i, v in enumerate(items) if i % 5 == 2]
    return train, held


# --- people -------------------------------------------------------------------------------------

FIRST_NAMES = words("""
Anna|Ben|Carlos|Zoë|José|Chloé|Priya|Wei|Hiroshi|Amara|Liam|Fatima|Omar|Emma|Noah|Søren|Björn|Mia|
Lucas|Sofia|Mateo|Renée|Yuki|Aisha|Jonas|Elena|Ravi|Ingrid|Tomás|Nadia|Kwame|Léa|Oliver|Hana|Diego|
Freya|Mohammed|Clara|Sven|Ayumi|Daniel|Leila|Marco|Agnieszka|Łukasz|Isabel|Tariq|Camille|Felix|
Ngozi|Hugo|Mei|Andrés|Greta|Kofi|Julia|Arjun|Maëlle|Peter|Olga|Sanjay|Astrid|Rafael|Naomi|Ethan|
Birgit|Jin|Lucía|Samuel|Chiara|Emeka|Lena|Pablo|Yasmin|Tobias|Ines|Kenji|Rosa|Dmitri|Alice|Bruno|
Keiko|Matteo|Zainab|Erik|Paula|Ahmed|Noémie|Victor|Ana|Jakub|Sara|Luis|Maya|Stefan|Grace|Ali|
François|Hannah|Iker|Eleni|Raj|Siobhan|Mikkel|Ayla|Nikolai|Beatriz|Chen|Orla|Santiago|Lin|Gabriel|
Ülkü|Tom|Marta|Jorge|Nina|Sam|Eva|Hamza|Laura|Finn|Ivana|Joe|Kai|Zara|Jesús|Anneke|Mariam|Théo
""")

SURNAMES = words("""
Müller|García|Nowak|O'Brien|Dubois|Rossi|Kim|Nguyen|Smith|Okafor|Jensen|Fernández|Tanaka|Schmidt|
Kowalski|Silva|Patel|Andersson|Yilmaz|Novák|Hernández|Moreau|Bianchi|Sato|Khan|Johansson|Ivanova|
Lefèvre|Gonçalves|Brennan|Adeyemi|Weiß|Lindqvist|Papadopoulos|Horvat|Costa|Park|Ali|Fischer|Mendes
""")

FAMILY_CONTACTS = words("Mom|Dad|Grandma|Grandpa|Mum|Papa|Nana")

PHONE_NUMBERS = words("""
555-0134|555-0199|+44 20 7946 0958|+1 415 555 0132|07700 900461|+49 30 901820|555-0187|
+33 1 70 36 39 50|0161 496 0123|+61 2 9876 5432|555-0110|+81 3 1234 5678|212-555-0147|
+34 912 345 678|555-0163|+39 06 1234 5678|020 7946 0321|+46 8 123 456|555-0171|+353 1 234 5678
""")

EMAIL_ADDRESSES = words("""
anna@example.com|ben.k@example.org|jose.garcia@example.net|zoe@example.com|team@example.com|
support@example.org|priya.patel@example.com|hr@example.net|m.muller@example.de|info@example.fr|
wei.chen@example.com|sales@example.com|lena@example.org|omar.ali@example.net|office@example.com
""")

# --- places -------------------------------------------------------------------------------------

CITIES = words("""
London|Paris|Berlin|München|Zürich|São Paulo|Kraków|Malmö|Reykjavík|Tokyo|北京|東京|Madrid|Rome|
Lisbon|Dublin|Vienna|Prague|Warsaw|Oslo|Stockholm|Helsinki|Copenhagen|Amsterdam|Brussels|Athens|
Istanbul|Cairo|Nairobi|Lagos|Cape Town|Mumbai|Delhi|Bangalore|Singapore|Bangkok|Hanoi|Seoul|
Shanghai|Sydney|Melbourne|Auckland|Toronto|Montréal|Vancouver|New York|Chicago|Boston|Denver|
Seattle|San Francisco|Los Angeles|Austin|Miami|Mexico City|Bogotá|Lima|Santiago|Buenos Aires|
Marrakesh|Düsseldorf|Köln|Genève|Göteborg|Porto|Sevilla|Málaga|Edinburgh|Manchester|Bristol|
Kyoto|Osaka|Taipei|Kraków|Valencia|Florence|Naples|Munich|Hamburg|Frankfurt|Lyon|Nice|Bordeaux|
Bruges|Tallinn|Riga|Vilnius|Zagreb|Ljubljana|Sofia|Bucharest|Budapest|Москва|Kyiv|Tbilisi|Dubai|
Doha|Tel Aviv|Accra|Dakar|Tunis|Quito|Havana|Honolulu|Anchorage|Perth|Wellington|Ålesund|Tromsø
""")

PLACES = words("""
Central Station|221B Baker Street|Gare du Nord|Café Müller|Terminal 2|Königstraße 12|Union Square|
Jardin du Luxembourg|Heathrow Airport|Pier 39|Hauptbahnhof|Plaza Mayor|10 Downing Street|
Golden Gate Park|Alexanderplatz|Shibuya Crossing|City Hospital|Riverside Mall|Maple Street 7|
Oak Avenue 42|St. Mary's Church|Grand Central Terminal|King's Cross|Museo del Prado|Rue de Rivoli 88|
Lakeside Park|Westfield Mall|Harbour Bridge|Schillerstraße 3|Elm Street 19|Victoria Station|
Northgate Library|Marina Bay|Stadium Road 5|Via Roma 21|Parkview Clinic|Old Town Square|Brick Lane|
Calle de Alcalá 50|Pine Street 310|Dam Square|Nørrebrogade 20|Market Street 1|Ocean Drive|
Hillcrest School|Sunset Boulevard|Pearl Street 9|Avenida Paulista 900|Rosenthaler Platz|Cedar Lane 4|
Bahnhofstraße 1|Temple Bar|Highland Road 77|Sagrada Família|Westminster Bridge|Carrer de Mallorca 401|
Southbank Centre|Willow Court 2|Marienplatz|Chapel Street 15
""")

ROOMS = words("""
kitchen|living room|bedroom|bathroom|hallway|office|garage|porch|dining room|basement|attic|
garden|nursery|study|guest room|laundry room|patio|staircase|kids room|den
""")

DOORS = words("front door|back door|garage door|side gate|patio door|main entrance|shed door|cellar door")

# --- time ---------------------------------------------------------------------------------------

WEEKDAYS = words("Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday")
MONTHS = words("January|February|March|April|May|June|July|August|September|October|November|December")

# --- free text ----------------------------------------------------------------------------------

TIMER_LABELS = words("""
pasta|laundry|tea|eggs|pizza|nap|oven|bread|homework|parking meter|pomodoro|rice|cookies|steak|
break|meditation|coffee|soup|popcorn|focus|dough|lasagna|chores|study session|roast|stretching
""")

ALARM_LABELS = words("""
wake up|gym|school run|flight|meeting prep|medication|standup|early shift|church|yoga|walk the dog|
bus|train|piano practice|morning run|feed the cat|pick up kids|team call|dentist|bin day
""")

TASKS = words("""
water the plants|pay the rent|buy a birthday card|take out the bins|book a dentist appointment|
pick up the dry cleaning|renew my passport|email the landlord|charge the laptop|feed the cat|
move the car|back up my phone|return the library books|order more coffee beans|submit the report|
check the oven|walk the dog|book the car service|cancel the gym trial|sign the permission slip|
update the budget spreadsheet|defrost the chicken|change the bedsheets|collect the dry cleaning ticket|
pay the electricity bill|prepare slides for Monday|buy flowers for Elena|stretch before bed|
send the invoice|file my taxes|refill the prescription|clean the fish tank|practice piano|
lock the shed|pick up Noah from practice|transfer money to savings|bring the umbrella|
review the contract|mail the postcard|top up my travel card|take my vitamins|wash the car|
replace the smoke alarm battery|buy stamps|call the plumber back|print the boarding passes|
pack the gym bag|check the tyre pressure|bake the cake for Sofia|write to Grandma
""")

EVENT_TITLES = words("""
Team standup|Dentist appointment|Lunch with Priya|Quarterly review|Yoga class|Parent-teacher meeting|
Project kickoff|Dinner with José|Budget planning|Haircut|Coffee with Ben|Piano lesson|Book club|
Doctor's appointment|Sprint retro|Interview with Zoë|Football practice|Board meeting|Date night|
Car service|Design review|Language exchange|Vet visit|Farewell drinks|Product demo|Therapy session|
One-on-one with Amara|Climbing session|Study group|Birthday party|Client call|Wedding rehearsal|
Town hall|Flat viewing|Guitar lesson|Team offsite|Brunch with Léa|Volunteer shift|Hackathon|
Tax advisor meeting
""")

MESSAGES = words("""
running 10 minutes late|see you at the café|can you pick up bread|I'm home|happy birthday|
call me when you land|dinner is ready|don't forget the keys|meeting moved to 3|thanks for today|
on my way|I left the charger at your place|the kids are asleep|good luck with the exam|
the flowers arrived safely|can we talk later|I'll bring dessert|where are you|love you|
traffic is terrible|the train is delayed|let's meet at the entrance|I got the tickets|
see you tomorrow|please call back|all good here|I'm outside|congratulations|miss you|
the door code is 4821|bring a jacket|we need more milk|I'm stuck in a meeting|sounds good|
the cat is fine|just landed|start without me|what time is dinner|I'll be there in five|
don't wait up|the plumber is coming at noon|lunch tomorrow|the film starts at 8|
can you feed the cat|I found your wallet|the heating is fixed|thank you so much|
we won the match|remember to bring your passport|keys are under the mat|check your inbox
""")

EMAIL_SUBJECTS = words("""
Invoice for March|Meeting notes|Project update|Holiday plans|Quick question|Weekly report|
Contract draft|Team lunch|Travel itinerary|Budget approval|Welcome aboard|Feedback on the proposal|
Change of address|Reminder about Friday|Photos from the trip|Job application|Lease renewal|
Conference schedule|Thank you|Follow-up from our call|Office closure|Password reset|Dinner on Saturday|
Receipt for your order|Volunteer sign-up
""")

NOTES = words("""
ideas for the garden|gate code is 2291|Wi-Fi password is on the router|book recommendations from Léa|
questions for the doctor|gift ideas for Mum|call insurance about the claim|parking level 3 spot 42|
Grandma's soup needs more thyme|things to pack for the beach|shoe size 42|plan the birthday surprise|
the blue paint is Stone Grey 05|podium speech draft|names for the puppy|locker number 118|
tyre pressure 2.4 bar|favourite ramen place on Brick Lane|homework is due Thursday|
passport expires in June|renew the domain|movies to watch|birthday ideas for Kofi|
fix the squeaky door|try the new bakery|ask Marco about the bike|seat 14C|licence plate KX21 ODL|
meeting room is B204|order new glasses
""")

SHOPPING_ITEMS = words("""
milk|eggs|bread|oat milk|crème fraîche|jalapeños|bananas|coffee beans|olive oil|rice|pasta|tomatoes|
onions|garlic|butter|cheddar|yoghurt|apples|spinach|chicken thighs|tofu|dish soap|toilet paper|
batteries|light bulbs|orange juice|flour|sugar|honey|oats|avocados|lemons|mozzarella|basil|
frozen peas|paper towels|toothpaste|shampoo|cat food|dog treats|sparkling water|green tea|
peanut butter|tortillas|salmon|mushrooms|carrots|potatoes|jam|cereal|crackers|hummus|feta|
soy sauce|kimchi|croissants|dark chocolate|almonds|bin bags|sponges|cumin|paprika|ginger|
mango|blueberries|strawberries|broccoli|cucumber|pesto|gnocchi|miso paste|coconut milk|
baking soda|vanilla|quinoa|lentils|chickpeas|ice cream|napkins|candles|aluminium foil
""")

SONGS = words("""
Blue Harbour|Midnight Train|Paper Moons|Golden Hour Drive|Static Hearts|Lanterns|Northern Lights|
Salt and Honey|Velvet Sky|Glass Houses|Runaway Summer|Quiet Storm|Neon Rivers|Wildflower|
Echoes in June|Copper Rain|Slow Dancing in Lisbon|Afterglow|Ten Thousand Miles|Ocean Eyes Reprise|
Café de Flore|Satellite Dreams|Mañana|Little Fires|Highway Hymn|Tangerine|Sunday Kitchen|
Moonlight Radio|City of Glass|Feather Light|Crimson Avenue|Orbit|Lullaby for Zoë|Electric Garden|
Polaroid|Saudade|Heavy Weather|Kaleidoscope Heart|The Long Way Home|Borealis|Sweet Nothing Waltz|
Rust and Roses|Parachute|Summer in Kyoto|Black Coffee Blues|Daydream Avenue|Chasing Comets|
Silver Linings|Hollow Bones|Wanderlust
""")

ARTISTS = words("""
The Velvet Owls|Nina Sol|Harbour Lights|Marlo Reyes|The Paper Kites Club|Aurora Vale|Sons of Tuesday|
DJ Koji|Lumen|Los Caminos|Ella Frost|The Midnight Choir|Kaito Mori|Beatriz Luna|Cold Static|
The Northern Orchestra|Jules Amari|Sakura Drive|Björk Lindahl|Mae Hollow|The Brass Foxes|
Orion Kane|Léon Marchand|Silk Road Ensemble|Ruby Ash|Theo Black|Amani|The Copper Sun|Ivy Lane|
Rafael Estrada
""")

PLAYLISTS = words("""
Morning Focus|Chill Evening|Road Trip|Deep Work|Running Mix|Dinner Party|Sleep Sounds|
Throwback Hits|Rainy Day|Sunday Brunch|Party Starters|Coffee House|Summer Vibes|Late Night Jazz|
Lo-fi Beats|Cleaning Mix
""")

GENRES = words("jazz|rock|pop|classical|hip hop|lo-fi|techno|reggae|blues|country|ambient|funk|soul|metal|folk")

SEARCH_QUERIES = words("""
best hiking trails near Denver|how tall is the Eiffel Tower|opening hours of the Louvre|
history of the printing press|how to fix a leaky tap|who invented the telephone|
cheap flights tips|how to make sourdough starter|symptoms of dehydration|best budget laptops 2026|
how many moons does Jupiter have|meaning of saudade|how to tie a bowline knot|
when was the Colosseum built|best coffee shops in Lisbon|how to remove wine stains|
population of Canada|how long to boil an egg|what is quantum computing|
directions for folding a paper crane|how to change a bike tyre|best board games for two|
why is the sky blue|how to learn Japanese fast|train times from Berlin to Prague|
rules of pétanque|how to care for a cactus|tallest mountain in Africa|
how to write a cover letter|what is the capital of Australia|how do vaccines work|
best beaches in Portugal|how to clean a cast iron pan|famous paintings by Frida Kahlo|
how to start running|what is a haiku|how to fold fitted sheets|origin of the croissant|
how far is Mars from Earth|how to grow tomatoes on a balcony|best museums in Madrid|
how to make cold brew|what does GDP mean|how to meditate|how to say thank you in Korean|
when is the next solar eclipse|how to defrost a freezer|best documentaries about history
""")

NEWS_TOPICS = words("""
technology|climate|sports|politics|science|business|health|football|space|education|
entertainment|travel|artificial intelligence|elections|energy|music|cycling|Formula 1|
the economy|housing|tennis|culture|local|world|Europe|Asia|fashion|gaming|transport|agriculture
""")

NEWS_SOURCES = words("BBC|Reuters|The Guardian|Le Monde|Der Spiegel|El País|NPR|Al Jazeera|AP|NHK")

LANGUAGES = words("""
Spanish|French|German|Italian|Portuguese|Japanese|Chinese|Korean|Dutch|Swedish|Polish|Turkish|
Greek|Arabic|Hindi|Russian|Norwegian|Danish|Finnish|Czech|Hungarian|Romanian|Vietnamese|Thai|
Indonesian|Ukrainian|Catalan|Irish|Welsh|Hebrew
""")

PHRASES = words("""
where is the train station|thank you very much|how much does this cost|I would like a coffee|
good morning|the bill please|do you speak English|I am allergic to nuts|nice to meet you|
see you tomorrow|where is the bathroom|can you help me|I am lost|one ticket please|
what time does it open|I love this city|happy new year|excuse me|is this seat free|
the food was delicious|I need a doctor|how are you|a table for two please|
good night|I don't understand|can I pay by card|where can I buy a ticket|my name is Ana|
it is very hot today|congratulations on your wedding
""")

RESTAURANTS = words("""
Luigi's|Sakura Sushi|Le Petit Café|The Golden Spoon|Casa Lucía|Noodle Bar 88|Brasserie Lumière|
Taj Palace|El Toro|The Green Table|Bistro Müller|Dragon Garden|Ocean Grill|Trattoria Roma|
Mama Ngozi's|Pho Saigon|Blue Fig|The Olive Tree|Smokehouse 21|Café Zoë|Kimchi House|La Paloma|
Saffron|The Hungry Fox|Osteria del Ponte|Tapas Bar Sol|Burger Barn|Curry Leaf|Little Lisbon|
Nordic Kitchen
""")

CURRENCIES = words("USD|EUR|GBP|JPY|CHF|CAD|AUD|SEK|NOK|DKK|PLN|INR|CNY|BRL|MXN|ZAR|NZD|SGD|KRW|TRY")

UNIT_PAIRS = [
    # (from unit, to unit) as a person writes them; copied verbatim.
    ("km", "miles"), ("miles", "km"), ("kilometers", "miles"), ("miles", "kilometers"),
    ("kg", "pounds"), ("pounds", "kg"), ("kg", "lbs"), ("lbs", "kg"), ("grams", "ounces"),
    ("ounces", "grams"), ("liters", "gallons"), ("gallons", "liters"), ("cups", "ml"), ("ml", "cups"),
    ("feet", "meters"), ("meters", "feet"), ("inches", "cm"), ("cm", "inches"), ("yards", "meters"),
    ("meters", "yards"), ("celsius", "fahrenheit"), ("fahrenheit", "celsius"), ("mph", "km/h"),
    ("km/h", "mph"), ("pints", "liters"), ("liters", "pints"), ("tablespoons", "ml"), ("acres", "hectares"),
    ("hectares", "acres"), ("stone", "kg"),
]

AIRLINE_CLASSES = ["economy", "premium", "business", "first"]

BANK_ACCOUNTS = words("checking|savings|joint|travel|business")

PAYMENT_NOTES = words("""
rent share|dinner last night|concert tickets|birthday gift|taxi fare|groceries|electricity split|
football fees|holiday deposit|coffee|book club snacks|Wi-Fi bill|parking|lunch on Friday|movie night
""")

# --- conversation that fits no tool ------------------------------------------------------------

CHITCHAT = words("""
tell me a joke|how are you today?|thanks, that's all|good morning!|you're very helpful|
what's your favourite colour?|I'm bored|do you like cats?|never mind|that's funny|
can you keep a secret?|I had a long day|what do you think about Mondays?|hello there|
goodbye for now|you're the best|I'm feeling a bit tired|do you dream?|just saying hi|
what's up?|ok cool|nothing, forget it|are you a robot?|I love rainy days|good night!|
sorry, wrong button|haha nice|who made you?|let's chat for a bit|I'm so excited about tomorrow|
that didn't make sense|tell me something nice|cheers mate|you're funny|how old are you?|
I think I'll go for a walk|make me laugh|do you have feelings?|thank you!|I'm back|
what's the meaning of life?|are you awake?|that's all for now|brilliant, thanks|oops
""")

# --- invented tools -----------------------------------------------------------------------------
# Neutral vocabulary for procedurally invented tools. None of these words belongs to a family's
# vocabulary (families.FAMILY_WORDS) or to a held-out family (families.B_WORDS); both are checked.

INVENTED_VERBS = words("""
polish|fold|stack|paint|label|sort|archive|tune|calibrate|sketch|carve|brew|sharpen|inflate|
assemble|dismantle|rotate|scan|measure|weigh|trim|prune|plant|harvest|knit|stitch|glaze|bake|
chill|warm|dust|sweep|rinse|soak|dry|seal|unseal|wrap|unwrap|pack|unpack|mount|unmount|load|
unload|shuffle|merge|split|rename|clone|freeze|thaw|grind|sift|blend|whisk|mix|pour|fill|drain|
bundle|tag|stamp|engrave|frame|hang|align|balance|charge|sync|refresh|reset|restore|launch|
dock|undock|anchor|hoist|lower|raise|spin|tilt|feed|groom|wash|shear|herd|count|survey|inspect|
audit|certify|register|approve|reject|flag|rank|score|grade|price|lease|rent|insure|repair|
patch|paint|varnish|sand|mold|cast|forge|weld|bolt|pin|clip|brace|hatch|incubate|sprout|graft|
water|mulch|fence|pave|plaster|tile|wire|solder|flash|compile|render|encode|decode|compress|
expand|shrink|stretch|polish|buff|dye|bleach|iron|press|steam|roast|toast|smoke|cure|ferment
""")

INVENTED_NOUNS = words("""
lantern|kettle|glacier|sprocket|ledger|banner|orchard|violin|turbine|canoe|beacon|quilt|anvil|
crate|satchel|telescope|compass|meadow|barrel|chandelier|windmill|greenhouse|aquarium|hive|
trellis|lathe|easel|loom|kiln|furnace|silo|barge|glider|kayak|sled|tractor|wagon|bellows|
cauldron|teapot|saucer|goblet|chalice|tapestry|mosaic|sculpture|statue|fountain|pergola|
gazebo|lighthouse|bridge|tunnel|canal|reservoir|dam|pylon|antenna|dynamo|piston|gear|valve|
nozzle|funnel|sieve|ladle|skillet|wok|spatula|whisker|brush|easel|palette|canvas|scroll|
parchment|quill|inkwell|stamp|seal|badge|medal|trophy|ribbon|rosette|banner|pennant|flagpole|
kite|balloon|zeppelin|rocket|probe|rover|drone|robot|widget|gadget|gizmo|module|capsule|
cartridge|spindle|bobbin|thimble|needle|button|zipper|buckle|harness|saddle|stirrup|bridle|
paddock|stable|barn|coop|kennel|hutch|aviary|terrarium|vivarium|cabinet|drawer|shelf|cupboard|
wardrobe|dresser|trunk|chest|casket|locket|pendant|bracelet|anklet|brooch|tiara|crown|helmet|
shield|banneret|catapult|trebuchet|cannon|mortar|pestle|crucible|beaker|flask|pipette|burner|
prism|lens|mirror|pendulum|metronome|sundial|hourglass|abacus|sextant|astrolabe|globe|atlas|
ladder|scaffold|crane|hoist|winch|pulley|lever|wedge|chisel|mallet|trowel|shovel|rake|hoe|
wheelbarrow|scarecrow|haystack|bale|sheaf|vineyard|cellar|cask|keg|vat|tank|cistern|boiler|
radiator|chimney|hearth|stove|oven|griddle|toaster|blender|juicer|grinder|mill|press|churn|
cheese|loaf|bagel|pretzel|waffle|crepe|muffin|scone|biscuit|pastry|tart|pie|cobbler|parfait
""")

INVENTED_ADJECTIVES = words("""
gentle|brisk|steady|bold|quiet|bright|dim|swift|slow|smooth|rough|fine|coarse|light|heavy|warm|
cool|dry|damp|crisp|soft|hard|loose|tight|narrow|wide|shallow|deep|plain|fancy|rustic|modern|
classic|vivid|pale|glossy|matte|sharp|blunt|round|square|oval|hollow|solid|dense|sparse|fresh|
aged|raw|mild|strong|low|medium|high|tiny|small|large|huge|minimal|standard|premium|basic|
compact|extended|partial|full|single|double|triple|manual|automatic|silent|loud|eager|lazy
""")

INVENTED_TEXT_PARAMS = words("""
color|label|code|title|owner|shape|texture|region|style|material|origin|source|destination|zone|
sector|lane|tier|pattern|finish|alias|nickname|motto|caption|remark|comment|memo|tagline|keyword|
category|species|breed|brand|model|edition|theme|preset|flavor|scent|grain|blend|tone|shade|variant|
serial|owner_name|location|section|channel|handle|marker|emblem|motif|glaze|fabric|coating|accent
""")

INVENTED_NUMBER_PARAMS = words("""
size|count|depth|weight|speed|level|width|height|priority|batch|layer|length|radius|margin|density|
pressure|slot|rank|quota|limit|ratio|factor|offset|spacing|padding|interval|capacity|threshold|
tolerance|strength|intensity|tension|torque|pitch|tempo|gauge|version|revision|stage|phase|cycle|
grade|angle|copies|retries|steps|layers|rows|columns|turns|passes|portions|coats
""")


INVENTED_PARAM_PREFIXES = words("max|min|target|new|primary|initial|final|base|extra|default|preferred")

INVENTED_BOOL_WORDS = words("""
verbose|locked|visible|shared|archived|pinned|muted|glow|urgent|cached|sealed|signed|heated|
padded|waxed|frosted|tinted|reinforced|insulated|labeled|numbered|stacked|wrapped|notify|overwrite|
dry_run|preview|strict|recursive|fragile
""")

INVENTED_STRING_VALUES = words("""
amber|cobalt|teal|crimson|ivory|ochre|slate|olive|maroon|indigo|Northwind|Bluebird|Atlas|Orion|
Juniper|Maple|Cedar|Harbor|Summit|Falcon|QX-17|B-204|Z9|LX-5|A113|K-77|R2|MK-3|TX-900|V-12|
north wing|east dock|bay 4|shelf 12|row C|unit 7B|level 3|gate 9|pier 2|block D|
Müller|Zoë|José|Ngozi|Søren|Chloé|Łukasz|Renée|Kwame|Mei|spring batch|winter set|trial run|
first draft|final cut|blue series|gold edition|night shift|test lot|sample 5
""")

INVENTED_PHRASES = words("""
handle with care|for the spring fair|do not stack|keep away from heat|north side only|
return by Friday|fragile corners|extra padding inside|for Zoë's studio|top shelf first|
leave at the back|check twice|use the blue tape|second floor|match the old one|
for the José order|urgent but gentle|no rush|ask Mei first|left of the window
""")

# Syllables for pseudo-words (made-up tool names such as "zorbify_flemwick").
PSEUDO_ONSETS = words("b|bl|br|d|dr|f|fl|fr|g|gl|gr|k|kl|kr|l|m|n|p|pl|pr|r|s|sk|sl|sn|sp|st|t|tr|v|w|z|zh|th|ch|qu")
PSEUDO_VOWELS = words("a|e|i|o|u|ai|ee|oo|ou|y")
PSEUDO_CODAS = words("|b|d|g|k|l|m|n|p|r|s|t|x|ck|nd|nt|rk|rn|sk|st|mp|lt|ff|zz")
PSEUDO_VERB_ENDINGS = words("ify|ate|ize|en|le|")
PSEUDO_NOUN_ENDINGS = words("wick|let|on|er|ling|ar|et|ix|um|o|")

# --- split B families (held out whole) ---------------------------------------------------------

ACTIVITIES = words("""
run|swim|yoga|cycling|rowing|hike|pilates|spin class|strength training|tennis|climbing|
boxing|walk|dance class|HIIT|stretching|skiing|football|basketball|surfing
""")

DISHES = words("""
lasagna|pad thai|banana bread|chicken curry|shakshuka|ratatouille|paella|pho|tiramisu|
carbonara|falafel|mushroom risotto|beef stew|pancakes|miso soup|tacos|crème brûlée|
lentil soup|apple pie|bibimbap|gazpacho|moussaka|jollof rice|goulash|pierogi|quiche|
fish pie|tom yum|couscous salad|brownies
""")

DIETS = ["vegetarian", "vegan", "gluten-free", "dairy-free", "keto", "halal", "kosher"]

PODCAST_SHOWS = words("""
Daily Byte|Slow History|Curious Minds Hour|Deep Sea Diaries|Startup Stories|Mind the Gap|
Weekly Atlas|Kitchen Table Talks|Space Between Stars|Crime Files Europe|Learn Italian Daily|
Sound Money|Long Read Aloud|Science Friday Night|Tech Tonic|Culture Club Radio|
Football Ramble On|Philosophy Bites Back|Word Nerds|Nature Notes
""")

TICKERS = words("AAPL|MSFT|GOOGL|AMZN|TSLA|NVDA|META|NFLX|SAP|ASML|TSM|BABA|SONY|SHEL|NESN|IBM|ORCL|INTC|AMD|UBER")

COMPANIES = words("""
Apple|Microsoft|Alphabet|Amazon|Tesla|Nvidia|Netflix|Siemens|Toyota|Samsung|Nestlé|Volkswagen|
Spotify|Adidas|Airbus|Unilever|Shopify|Ferrari|Philips|Ericsson
""")

CARRIERS = ["ups", "fedex", "dhl", "usps", "royal mail", "dpd"]


# --- the word source ---------------------------------------------------------------------------------
# Most copied values are built from words of a large dictionary, so that the model cannot remember
# them and must copy them from the request (docs/training-data.md, "Value sources").

DICTIONARY = "/usr/share/dict/american-english"  # Debian's wamerican package (scripts/setup.sh)

# Words never drawn from the word source: slurs, profanity, sexual and violent words. A stem blocks
# every word that starts with it; a word blocks itself and its plural.
BLOCKED_STEMS = words("""
fuck|shit|cunt|bitch|nigg|fagg|whore|slut|rapist|pussy|wank|bastard|porn|nazi|hitler|negro|
masturbat|orgasm|sperm|clitor|testic|scrot|dildo|incest|molest|pedophil|paedophil|genocid|holocaust|
jihad|terroris|cocain|heroin|suicid|penis|vagin|erecti|nipple|boob|horny|lewd|smut|pimp|hooker|
prostitut|harlot|murder|slaughter|massacre|kidnap|torture|assassin|bomb|sodom|bugger|arse|damn|
goddam|bollock|crotch|fetish|bondage|semen|ejacul|sexual|sexi|erotic|obscen|perver|slave|lynch|
gestapo|swastika|kkk|retard|moron|imbecil|spastic|cripple|midget|tranny|shemale|hermaphrod|
faecal|fecal|faeces|feces|excrement|urin|menstru|menopaus|genital|rectal|rectum|bowel|diarrh|enema|
syphil|gonorr|herpes|allah|jesus|christ|koran|quran|bible|buddha
""")
BLOCKED_WORDS = words("""
fag|dyke|spic|chink|coon|gook|wop|dago|kike|honky|cracker|cock|dick|crap|piss|tit|tits|anal|anus|
homo|queer|gay|lesbian|sex|sexy|kill|killer|killing|killed|rape|raped|raping|gun|guns|meth|drug|
drugs|crack|weed|booze|drunk|nude|naked|breast|breasts|butt|butts|ass|asses|hell|devil|satan|
poop|puke|vomit|corpse|dead|death|die|dying|slay|stab|shoot|shot|war|wars|nigra|gypsy|gyp|jap|
paki|yid|hun|god|gods|negress|mulatto|savage|savages|idiot|idiots|dumb|stupid|ugly|fat|fatso
""")


class WordSourceMissing(RuntimeError):
    """The word source (DICTIONARY) is not installed."""


class WordSource:
    """The words values are built from, read once from `path` on first use (file order; the file
    decides the data as the seed does, so manifest.json records its sha256):

      common  plain lowercase alphabetic words of 3 to 12 letters ("lantern", "quibbled")
      proper  capitalised words of 3 to 12 letters, for proper nouns ("Gonzalo", "Asunción")

    Possessives ("Asunción's") and blocked words are left out."""

    COMMON = re.compile(r"[a-z]{3,12}")

    def __init__(self, path=DICTIONARY):
        self.path = path
        self._common = self._proper = None
        self.sha256 = None

    def _load(self):
        if self._common is not None:
            return
        if not os.path.exists(self.path):
            raise WordSourceMissing(
                f"word source {self.path} is missing: training values are built from Debian's wamerican "
                f"word list (install it: sudo apt-get install wamerican, or run scripts/setup.sh as root)")
        with open(self.path, "rb") as f:
            raw = f.read()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        common, proper = [], []
        for line in raw.decode("utf-8").splitlines():
            w = line.strip()
            if not 3 <= len(w) <= 12 or blocked(w.lower()):
                continue
            if self.COMMON.fullmatch(w):
                common.append(w)
            elif w[0].isupper() and w.isalpha() and w[1:].islower():
                proper.append(w)
        if len(common) < 10000 or len(proper) < 2000:
            raise WordSourceMissing(f"word source {self.path} has {len(common)} common and {len(proper)} "
                                    "proper words: not the wamerican list (expected about 60,000 and 9,000)")
        self._common, self._proper = common, proper

    @property
    def common(self):
        self._load()
        return self._common

    @property
    def proper(self):
        self._load()
        return self._proper

    def describe(self):
        """What manifest.json records about the word source."""
        self._load()
        return {"path": self.path, "sha256": self.sha256, "common_words": len(self._common),
                "proper_words": len(self._proper)}


_BLOCKED_STEM_RE = re.compile("|".join(BLOCKED_STEMS))
_BLOCKED = set(BLOCKED_WORDS) | {w + "s" for w in BLOCKED_WORDS}


def blocked(word):
    """Whether a lowercase word is blocked (BLOCKED_STEMS, BLOCKED_WORDS)."""
    return word in _BLOCKED or _BLOCKED_STEM_RE.match(word) is not None


WORD_SOURCE = WordSource()

# Words a request uses for something other than a value: a value built from random words never
# contains one (slots.ValueRules.request_words; families.py adds every enum and switch word), so
# every word of a built value comes from its own span of the request.
REQUEST_WORDS = set(words("""
on|off|at|to|from|for|in|into|by|with|and|then|also|please|thanks|about|saying|called|named|titled|
labelled|subject|body|today|tomorrow|tonight|yesterday|noon|midnight|midday|morning|evening|
afternoon|night|weekend|week|weeks|month|months|year|years|next|this|last|every|daily|am|pm|
second|seconds|minute|minutes|min|mins|hour|hours|day|days|percent|degree|degrees|half|quarter|past|
hundred|thousand|dozen|couple|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|
thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|
seventy|eighty|ninety|first|second|third|lights|light|volume|timer|alarm|reminder|note|list|call|
text|message|email|play|song|playlist|weather|door|room
""")) | {w.lower() for w in WEEKDAYS + MONTHS}

# --- material for built values (slots.py, "Built values") ----------------------------------------------

STREET_TYPES = words("Street|Road|Lane|Avenue|Way|Boulevard|Drive|Court|Place|Crescent|Close|Terrace")
PLACE_KINDS = words("""
Park|Mall|Library|Clinic|Hospital|School|Square|Market|Bridge|Museum|Stadium|Harbour|Airport|
Church|Gallery|Pier|Plaza|Centre|Station|Gardens|Arena|Theatre|Campus|Marina|Tower|Hall
""")
CITY_FORMS = ["{N} {M}", "New {N}", "San {N}", "Port {N}", "{N} Bay", "{N} Falls", "{N} Springs",
              "{N} Heights", "{N}ville", "{N}burg", "Saint {N}", "Lake {N}", "{N}-on-{M}", "{N} City"]
RESTAURANT_KINDS = words("""
Grill|Bistro|Diner|Trattoria|Sushi|Tavern|Taqueria|Brasserie|Noodle House|Pizzeria|Steakhouse|
Canteen|Ramen|Deli|Bakery|Kitchen|Cantina|Izakaya|Bar
""")
COMPANY_SUFFIXES = words("""
Labs|Foods|Group|Systems|Motors|Bank|Energy|Partners|Works|Media|Holdings|Industries|Robotics|
Pharma|Airlines|Telecom|Capital|Logistics|Software|Studios|Mining|Textiles
""")
MASTHEADS = words("Times|Post|Herald|Gazette|Tribune|Chronicle|Journal|Observer|Daily|Review|Monitor|Express")
DEVICE_NOUNS = words("speaker|soundbar|radio|stereo|TV|headphones|earbuds|amp|speakers|boombox")
COLOURS = words("red|blue|amber|warm white|purple|orange|yellow|pink|green|cool white|teal|lilac")
GENRE_WORDS = words("rock|pop|jazz|folk|house|punk|soul|metal|funk|blues|disco|techno|trance")
EMAIL_TLDS = words("com|org|net|io|de|fr|co.uk|es|nl|dev|app|it|se|ch|ca")
SHOW_FORMS = ["The {W} Hour", "{W} {W2}", "{N} Talks", "{W} Weekly", "Inside {N}", "The {W} {W2} Show",
              "{W} and {W2}", "Tales of {N}", "{W} Radio"]

# Accented letters put into some built words ("Zoë", "Søren": values are copied with them).
ACCENTS = {"e": "éèë", "u": "üú", "o": "øöó", "n": "ñ", "c": "ç", "a": "åáä", "i": "íï"}

# Characters of Chinese and Japanese names and places (a few values are written in CJK).
CJK_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡林郭何高罗佐藤山田中村小木金朴"
CJK_GIVEN = "伟芳娜敏静丽强磊洋艳勇军杰娟涛明超秀霞平刚英华玉萍红健翔宇浩子美恵太郎花奈"
CJK_PLACE_ENDINGS = "京州山海川阳安江城岛"

# Latin to Cyrillic, letter by letter, for a few names written in Cyrillic.
CYRILLIC = {"a": "а", "b": "б", "c": "к", "d": "д", "e": "е", "f": "ф", "g": "г", "h": "х", "i": "и",
            "j": "й", "k": "к", "l": "л", "m": "м", "n": "н", "o": "о", "p": "п", "q": "к", "r": "р",
            "s": "с", "t": "т", "u": "у", "v": "в", "w": "в", "x": "кс", "y": "ы", "z": "з"}
