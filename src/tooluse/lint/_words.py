"""What the linter reads in names and prose: words, summaries, verbs.

Heuristics tuned for few false positives: each check asks for a plain sign
(a name token, a verb after "and", a result word near a structure word) rather
than guessing at meaning.
"""

from __future__ import annotations

import re

__all__ = [
    "LEADING_WRITE_VERBS",
    "NOUN_LIKE",
    "READ_VERBS",
    "WRITE_VERBS",
    "content_words",
    "job_verb",
    "joined_jobs",
    "name_tokens",
    "stem",
    "structured_result",
    "summary",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry no meaning of their own in a description.
_FILLER = _words(
    """
    a an the of to for in on at by with from and or is are be been this that these those
    it its which as given specified provided specific certain some any all one value
    values parameter param parameters argument arguments arg input inputs field optional
    required default string str integer int number float boolean bool list array object
    dict data info information item thing stuff tool function method helper utility misc
    todo tbd fixme none n/a
    """
)

# Verbs that, after "and", start a second job: a write or a transformation of what
# the first job found ("search … and summarize …"). Verbs that only read or compute
# ("sends a request and retrieves the response") describe one job's steps, and
# nouns that double as verbs (list, order, post, book, email) are left out on purpose.
_SECOND_JOBS = _words(
    """
    summarize summarise translate send notify delete remove create write save
    upload publish insert modify edit cancel schedule update reply forward archive
    """
)
_SECOND_JOB_FORMS = (
    _SECOND_JOBS | {v + "s" for v in _SECOND_JOBS} | {v + "es" for v in _SECOND_JOBS}
)
# First verbs that only prepare what the second does, or say it twice ("cancels and deletes").
_PREPARES = _words(
    "build builds construct constructs prepare prepares compose composes cancel cancels"
)
# Second verbs that only finish the first job's write ("archives … and stores …").
_PERSIST = _words("save saves store stores write writes")

#: Name tokens that say a tool changes something outside the run.
WRITE_VERBS = _words(
    """
    send delete remove create update write post insert upload save cancel pay transfer
    publish submit modify edit rename purchase buy reply forward share invite reserve
    schedule put patch drop reset append assign register subscribe unsubscribe archive
    restore grant revoke deposit withdraw sell email notify tweet retweet comment
    reschedule replace clear close apply approve reject confirm join leave kick ban
    follow unfollow like block unblock lock unlock start stop pause resume activate
    deactivate install uninstall deploy commit push merge refund charge sign upgrade
    downgrade
    """
)
#: A name's first token that says the tool only reads ("get_email_address").
READ_VERBS = _words(
    """
    get list fetch read search find query lookup look retrieve check count show describe
    view is has can calculate compute estimate validate verify convert predict analyze
    analyse summarize summarise translate parse format render preview explain recommend
    suggest compare match detect classify extract download load sample simulate
    """
)
#: Write verbs that read as nouns at the end of a name ("sports_match_schedule",
#: "get_user_email"): they count only before the name's last token.
NOUN_LIKE = _words(
    """
    schedule share post comment email transfer tweet reply forward patch drop reset
    register archive deposit update invite close start stop lock like block charge
    sign follow push commit merge join leave ban refund
    """
)
#: Write verbs that are also common nouns or pure operations ("add" two numbers,
#: "set" of items): they count only as the first of several tokens (add_contact).
LEADING_WRITE_VERBS = _words("add set book order mark move enable disable")

_RESULT_WORDS = re.compile(r"\b(returns?|returning|outputs?|yields?)\b", re.I)
_STRUCTURE = re.compile(
    r"\b(json|dict|dictionary|dictionaries|mapping|list of|array|tuple|key-value|keys"
    r"|fields|columns|rows|table|csv|comma-separated|object with|objects with"
    r"|each with|containing the)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def job_verb(word: str) -> bool:
    """Whether a name's token after "and" starts a job of its own."""
    return word in _SECOND_JOB_FORMS or word in WRITE_VERBS or word in READ_VERBS


def name_tokens(name: str) -> list[str]:
    """``searchAndSummarize``, ``search_and_summarize`` and ``files.search-and-sum`` → words."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t.lower() for t in re.split(r"[\W_]+", spaced) if t]


def stem(word: str) -> str:
    """A crude stem: enough that "gets", "getting" and "get" meet."""
    word = word.lower().strip("'\"`()[]{}.,;:!?")
    for suffix in ("ing", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> list[str]:
    """The words of `text` that say something, stemmed."""
    words = re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-/]*", text)
    return [stem(w) for w in words if w.lower() not in _FILLER]


def summary(description: str) -> str:
    """The first sentence or paragraph of a description."""
    text = description.strip()
    first = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    return " ".join(first.split())


def joined_jobs(text: str) -> str | None:
    """The second verb of "<verb> … and <verb> …" in `text`, if it reads as two jobs."""
    words: list[str] = re.findall(r"[A-Za-z]+", text.lower())
    if words and words[0] in _PREPARES:
        return None  # "builds a request and sends it" is one job's two steps
    for i, word in enumerate(words[:-1]):
        if word != "and":
            continue
        following = words[i + 1]
        if following == "then" and i + 2 < len(words):
            following = words[i + 2]
        if following in _SECOND_JOB_FORMS and not (
            following in _PERSIST and words[0] in WRITE_VERBS | _SECOND_JOB_FORMS
        ):
            return following
    return None


def structured_result(description: str) -> str | None:
    """The sentence of `description` that describes a structured result, if one does.

    The structure must follow the word for the result: "filters a list of strings,
    returning those that match" describes its input, not its result.
    """
    for sentence in _SENTENCE_END.split(description):
        result = _RESULT_WORDS.search(sentence)
        if result and _STRUCTURE.search(sentence, result.end()):
            return " ".join(sentence.split())
    return None
