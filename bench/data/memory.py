"""A conversational-memory test set, generated deterministically: daily notes of two-person dialogues and questions
about what was said weeks earlier, each labelled with the turns that answer it.

    python -m bench.data.memory [--seed 22] [--out DIR]     # writes the workspace and questions.jsonl to look at

Each pair of people talks on ~30 days spread over ten months (2026-01 .. 2026-10). A day's dialogue is one ReMe daily
note, `daily/YYYY-MM-DD/<pair>.md` (front matter, a heading, one `- **Name:** ...` line per turn); every turn is one
chunk (its own line). Facts are planted in random turns among small talk and near misses (the same kind of fact
about someone else, in another pair's notes or said by the other speaker). What makes it hard:
  paraphrase   the question shares few words with its evidence ("adopted a puppy ... call him X" vs "what did Sam
               name the new dog?")
  link name    the person asked about is named only inside a wikilink target (`[[people/lena-fischer.md]]`)
  date         a date said one way ("on June 21") and asked another ("the 21st of June")
  update       a plan stated, then changed in a later session: both turns are evidence
  cjk          two of the pairs talk in Chinese, and are asked in Chinese
No data is fetched; the same seed always gives the same notes and questions.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from bench.data.conversations import MONTHS, MemorySet, arguments, write_out

SEED = 22
DAYS = (dt.date(2026, 1, 5), dt.date(2026, 10, 30))

EN_PAIRS = [("Sam", "Alex"), ("Maya", "Tom"), ("Priya", "Jonas"), ("Lucia", "Ben"), ("Omar", "Hana"), ("Ivy", "Noah"),
            ("Rosa", "Felix"), ("Dev", "Ana"), ("Kofi", "Elsa"), ("Mei", "Lars")]
ZH_PAIRS = [("小林", "王芳"), ("陈晨", "李雷")]
LINK_FIRST = ["Lena", "Marco", "Aisha", "Kenji", "Nora", "Pablo", "Greta", "Yusuf", "Clara", "Ravi", "Elena", "Tariq"]
LINK_LAST = ["Fischer", "Rossi", "Bello", "Sato", "Lind", "Ortiz", "Holm", "Demir", "Voss", "Menon", "Petrova", "Aziz"]

# slot values
BREEDS = ["beagle", "border collie", "dachshund", "labrador", "corgi", "greyhound"]
PETNAMES = ["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Clementine", "Ziggy", "Pickle"]
CITIES = ["Lisbon", "Kyoto", "Tallinn", "Oaxaca", "Tbilisi", "Porto", "Valparaiso", "Ljubljana", "Hanoi", "Bergen"]
COMPANIES = ["Northwind Analytics", "Brightwave Labs", "Copperleaf Health", "Harbor Freight Systems", "Lumen Robotics",
             "Tidewater Bank", "Quillstone Games"]
ROLES = ["data engineer", "product designer", "site reliability engineer", "account manager", "research scientist"]
INJURIES = [("knee", "six weeks"), ("ankle", "a month"), ("shoulder", "eight weeks"), ("back", "three weeks"),
            ("wrist", "five weeks")]
ITEMS = [("cello", "instrument"), ("road bike", "bicycle"), ("espresso machine", "coffee maker"),
         ("sewing machine", "sewing machine"), ("kayak", "boat"), ("telescope", "telescope")]
BOOKS = [("The Overstory", "trees"), ("Project Hail Mary", "space travel"), ("Braiding Sweetgrass", "botany"),
         ("The Soul of a New Machine", "computer engineering"), ("Salt Fat Acid Heat", "cooking"),
         ("Thinking in Systems", "systems thinking")]
EVENTS = [("Mia's piano recital", "recital"), ("the neighbourhood potluck", "potluck"), ("our climbing trip", "trip"),
          ("the housewarming", "housewarming party"), ("Dad's retirement dinner", "retirement party")]
APPOINTMENTS = [("dentist appointment", "dentist"), ("visa interview", "interview at the consulate"),
                ("car inspection", "vehicle check"), ("eye exam", "optician visit")]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
PLACES = ["climbing gym", "farmers market", "train station", "bookshop on Elm Street", "swimming pool"]
DIETS = [("vegetarian", "meat"), ("vegan", "cheese"), ("gluten-free", "bread")]

SMALL_TALK = [
    "How was your weekend?", "Pretty quiet, mostly caught up on sleep.", "Ha, same here.", "Did you see the game?",
    "No, I missed it, was it any good?", "The weather has been awful lately.", "I know, it rained all week.",
    "Work has been hectic, honestly.", "Anything fun planned for the evening?", "Just dinner and a movie, probably.",
    "Let's grab coffee soon.", "Sounds good, text me.", "I've been meaning to call you.", "Sorry I was late earlier.",
    "No worries at all.", "That reminds me, I owe you lunch.", "Traffic was terrible this morning.",
    "I'm trying to drink less coffee.", "The kids are driving me up the wall.", "I finally cleaned the garage.",
    "We should plan something for the summer.", "Did you finish that series?", "Two more episodes to go.",
    "My phone battery dies by noon now.", "I started journaling again.", "Long day, talk tomorrow?",
]
NEAR_MISS = [
    "My sister has a {breed} too, total chaos in a small flat.", "I've always wanted to visit {city} someday.",
    "A friend of mine interviewed at {company} once.", "My {body} has been a bit stiff after yoga.",
    "I saw a {item} at the flea market but it was too pricey.", "Someone at work keeps talking about {book}.",
    "We went to a recital last year, it ran way too long.", "I rescheduled my haircut again.",
    "Flights to {city} are so expensive in summer.", "I tried a {diet} recipe, it was fine.",
    "Ran into an old colleague at the {place}.", "My cousin named her cat {pet}.",
]

ZH_SMALL_TALK = [
    "周末过得怎么样？", "挺安静的，主要是补觉。", "哈哈，我也是。", "最近天气太差了。", "是啊，下了一整周的雨。",
    "工作最近特别忙。", "晚上有什么安排吗？", "大概就是吃饭看电影。", "改天一起喝咖啡吧。", "好的，发消息给我。",
    "早上堵车堵得厉害。", "孩子们快把我逼疯了。", "我终于把车库收拾干净了。", "那部剧你看完了吗？", "还剩两集。",
]
ZH_NEAR = ["我姐姐也养了一只{breed}，小房子里特别乱。", "我一直想去{city}看看。", "我有个朋友去{company}面试过。",
           "去{city}的机票夏天特别贵。", "我表妹给她的猫起名叫{pet}。"]
ZH_BREEDS = ["柯基", "柴犬", "金毛", "泰迪", "哈士奇"]
ZH_PETS = ["豆豆", "团子", "可乐", "布丁", "馒头"]
ZH_CITIES = ["成都", "大理", "厦门", "青岛", "西安", "桂林"]
ZH_COMPANIES = ["星河科技", "云帆数据", "蓝海医疗", "青松软件"]
ZH_INJURIES = [("膝盖", "六周"), ("脚踝", "一个月"), ("肩膀", "八周")]


@dataclass
class Fact:
    """Turns to plant (one per session, in order) and the question they answer."""

    kind: str
    turns: list[tuple[str, str]]  # (speaker, text)
    question: str


@dataclass
class Note:
    """One daily note: a date, a pair, its turns."""

    date: dt.date
    pair: str
    turns: list[tuple[str, str]] = field(default_factory=list)
    evidence: dict[int, list[int]] = field(default_factory=dict)  # turn index -> question ids

    @property
    def path(self) -> str:
        """The note's workspace path (the date in the second segment, as ReMe's date filter reads it)."""
        return f"daily/{self.date.isoformat()}/{self.pair}.md"

    def lines(self) -> tuple[list[str], list[int]]:
        """The note's Markdown lines and the 1-based line of each turn."""
        names = sorted({s for s, _ in self.turns})
        out = ["---", f"date: {self.date.isoformat()}", f"participants: {', '.join(names)}", "---",
               f"# {self.date.isoformat()}", ""]
        at = []
        for speaker, text in self.turns:
            at.append(len(out) + 1)
            out.append(f"- **{speaker}:** {text}")
        return out, at


def slug(name: str) -> str:
    """A person's file name in the workspace."""
    return name.lower().replace(" ", "-")


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 21st ..."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


class Unique:
    """Draws that never repeat within one generated set (a linked person or a date is asked about once)."""

    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def person(self) -> str:
        """A linked person's full name not drawn before."""
        while (name := f"{self.rng.choice(LINK_FIRST)} {self.rng.choice(LINK_LAST)}") in self.used:
            pass
        self.used.add(name)
        return name

    def date(self) -> tuple[int, int]:
        """A (month index, day) not drawn before, April..October."""
        while (md := (self.rng.randrange(3, 10), self.rng.randrange(1, 29))) in self.used:
            pass
        self.used.add(md)
        return md


def en_facts(rng: random.Random, me: str, other: str, unique: Unique) -> list[Fact]:
    """English facts about `me` (said by `me`), of every kind."""
    f: list[Fact] = []
    breed, pet = rng.choice(BREEDS), rng.choice(PETNAMES)
    f.append(Fact("paraphrase", [(me, f"We finally brought home a {breed} puppy last weekend, the kids call him {pet}.")],
                  f"What did {me} name the new dog?"))
    city, month = rng.choice(CITIES), rng.choice(MONTHS[5:9])
    f.append(Fact("paraphrase", [(me, f"Booked flights to {city} for the {month} break, staying near the old harbour.")],
                  f"Where is {me} travelling on holiday this year?"))
    company, role = rng.choice(COMPANIES), rng.choice(ROLES)
    f.append(Fact("paraphrase", [(me, f"I handed in my notice today. Starting at {company} as a {role} next month!")],
                  f"Which employer is {me} moving to?"))
    body, wait = rng.choice(INJURIES)
    f.append(Fact("paraphrase", [(me, f"The physio says my {body} needs {wait} more before I can run again.")],
                  f"How long until {me} can go jogging again?"))
    item, syn = rng.choice(ITEMS)
    price = rng.choice([80, 120, 150, 200, 240, 300])
    f.append(Fact("paraphrase", [(me, f"Picked up a secondhand {item} for {price} euros off a neighbour.")],
                  f"How much did {me} pay for the used {syn}?"))
    book, topic = rng.choice(BOOKS)
    f.append(Fact("paraphrase", [(me, f"You have to read {book}, best thing I've read about {topic} in years.")],
                  f"Which book on {topic} did {me} recommend?"))
    diet, food = rng.choice(DIETS)
    f.append(Fact("paraphrase", [(me, f"I've gone {diet} since spring, so no more {food} for me.")],
                  f"What eating habits has {me} adopted?"))
    person, place, city2 = unique.person(), rng.choice(PLACES), rng.choice(CITIES)
    f.append(Fact("link name", [(me, f"Bumped into [[people/{slug(person)}.md]] at the {place}, she's moving to {city2}.")],
                  f"Where is {person} relocating to?"))
    person2 = unique.person()
    f.append(Fact("link name", [(me, f"[[people/{slug(person2)}.md]] lent me her tent for the weekend, so generous.")],
                  f"What did {me} borrow from {person2}?"))
    event, syn_e = rng.choice(EVENTS)
    mon, day = unique.date()
    f.append(Fact("date", [(me, f"{event.capitalize()} is on {MONTHS[mon]} {day}, keep the evening free.")],
                  f"What is happening on the {ordinal(day)} of {MONTHS[mon]}?"))
    appt, syn_a = rng.choice(APPOINTMENTS)
    d1, d2 = rng.sample(WEEKDAYS, 2)
    f.append(Fact("update", [(me, f"My {appt} is on {d1} morning, ugh."),
                             (me, f"They called and pushed the {appt} to {d2} afternoon.")],
                  f"When is {me}'s {syn_a} now?"))
    return f


def zh_facts(rng: random.Random, me: str, other: str, unique: Unique) -> list[Fact]:
    """Chinese facts about `me`."""
    breed, pet = rng.choice(ZH_BREEDS), rng.choice(ZH_PETS)
    city, company = rng.choice(ZH_CITIES), rng.choice(ZH_COMPANIES)
    body, wait = rng.choice(ZH_INJURIES)
    person = unique.person()
    return [
        Fact("cjk", [(me, f"上周末我们终于领养了一只{breed}小狗，孩子们叫它{pet}。")], f"{me}给新养的狗起了什么名字？"),
        Fact("cjk", [(me, f"我订了去{city}的机票，暑假住在老城区附近。")], f"{me}今年假期要去哪里旅行？"),
        Fact("cjk", [(me, f"我今天递交了辞职信，下个月开始去{company}上班！")], f"{me}要跳槽到哪家公司？"),
        Fact("cjk", [(me, f"理疗师说我的{body}还要{wait}才能重新跑步。")], f"{me}还要多久才能慢跑？"),
        Fact("cjk", [(me, f"在书店碰到了[[people/{slug(person)}.md]]，她要搬到{city}去了。")], f"{person}要搬去哪里？"),
        Fact("cjk", [(me, "我的牙医预约在周二上午。"), (me, "诊所打电话把牙医预约改到了周四下午。")], f"{me}现在什么时候看牙医？"),
    ]


def filler(rng: random.Random, zh: bool) -> str:
    """A small-talk line or a near miss (a fact-like line that answers nothing)."""
    if zh:
        if rng.random() < 0.25:
            return rng.choice(ZH_NEAR).format(breed=rng.choice(ZH_BREEDS), city=rng.choice(ZH_CITIES),
                                              company=rng.choice(ZH_COMPANIES), pet=rng.choice(ZH_PETS))
        return rng.choice(ZH_SMALL_TALK)
    if rng.random() < 0.3:
        return rng.choice(NEAR_MISS).format(
            breed=rng.choice(BREEDS), city=rng.choice(CITIES), company=rng.choice(COMPANIES),
            body=rng.choice(INJURIES)[0], item=rng.choice(ITEMS)[0], book=rng.choice(BOOKS)[0],
            diet=rng.choice(DIETS)[0], place=rng.choice(PLACES), pet=rng.choice(PETNAMES))
    return rng.choice(SMALL_TALK)


def pair_notes(rng: random.Random, pair: tuple[str, str], zh: bool, qid0: int, unique: Unique, sessions: int = 30):
    """The notes of one pair and its questions [(qid, question, kind)]."""
    span = (DAYS[1] - DAYS[0]).days
    dates = sorted(DAYS[0] + dt.timedelta(days=d) for d in rng.sample(range(span), sessions))
    name = "-".join(slug(p) for p in pair) if not zh else f"pair-{qid0}"
    notes = [Note(d, name) for d in dates]
    for n in notes:
        for i in range(rng.randrange(9, 15)):
            n.turns.append((pair[i % 2], filler(rng, zh)))
    facts = []
    for me, other in (pair, pair[::-1]):
        facts += zh_facts(rng, me, other, unique) if zh else en_facts(rng, me, other, unique)
    questions = []
    for k, fact in enumerate(facts):
        qid = qid0 + k
        # the evidence goes in the first 2/3 of the sessions: questions are asked later ("weeks earlier")
        sessions_at = sorted(rng.sample(range(sessions * 2 // 3), len(fact.turns)))
        for (speaker, text), s in zip(fact.turns, sessions_at):
            note = notes[s]
            pos = rng.randrange(len(note.turns) + 1)
            note.turns.insert(pos, (speaker, text))
            note.evidence = {(i + 1 if i >= pos else i): q for i, q in note.evidence.items()}
            note.evidence.setdefault(pos, []).append(qid)
        questions.append((qid, fact.question, fact.kind))
    return notes, questions


def generate(seed: int = SEED) -> MemorySet:
    """The whole set for a seed (the same seed gives the same set)."""
    rng = random.Random(seed)
    files: dict[str, list[str]] = {}
    chunks: list[tuple[str, str, int, str]] = []
    questions: list[dict] = []
    evidence: dict[int, list[str]] = {}
    pairs = [(p, False) for p in EN_PAIRS] + [(p, True) for p in ZH_PAIRS]
    unique = Unique(rng)
    for pair, zh in pairs:
        notes, qs = pair_notes(rng, pair, zh, len(questions) + 1, unique)
        for note in notes:
            lines, at = note.lines()
            files[note.path] = lines
            for i, line_no in enumerate(at):
                cid = f"{note.path}#{line_no}"
                chunks.append((cid, note.path, line_no, lines[line_no - 1]))
                for q in note.evidence.get(i, []):
                    evidence.setdefault(q, []).append(cid)
        questions += [{"id": q, "question": text, "kind": kind, "evidence": []} for q, text, kind in qs]
    for q in questions:
        q["evidence"] = evidence[q["id"]]
    return MemorySet(files, chunks, questions)


def main() -> None:
    args = arguments(__doc__, SEED, "/tmp/reme-es-memory-set")
    data = generate(args.seed)
    out = write_out(data, args.out)
    print(f"{len(data.files)} notes, {len(data.chunks)} turns, {len(data.questions)} questions {data.kinds()} -> {out}")


if __name__ == "__main__":
    main()
