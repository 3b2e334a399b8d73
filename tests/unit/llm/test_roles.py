"""Messages for chat templates without a system role and with strictly alternating turns."""

from socsim.llm.types import OPENING, Request, alternating


def test_system_opens_the_first_user_turn():
    msgs = (("system", "S"), ("user", "u1"), ("assistant", "a1"), ("user", "u2"))
    assert alternating(msgs) == (("user", "S\n\nu1"), ("assistant", "a1"), ("user", "u2"))


def test_assistant_first_gets_the_system_text_as_a_user_turn_and_runs_are_joined():
    msgs = (("system", "S1"), ("assistant", "a1"), ("assistant", "a2"), ("user", "u1"), ("system", "S2"))
    assert alternating(msgs) == (("user", "S1\n\nS2"), ("assistant", "a1\n\na2"), ("user", "u1"))
    assert alternating((("assistant", "a"),)) == (("user", OPENING), ("assistant", "a"))


def test_the_default_sends_messages_as_they_are():
    r = Request.chat([("system", "S"), ("assistant", "a")], 1)
    assert r.message_dicts() == [{"role": "system", "content": "S"}, {"role": "assistant", "content": "a"}]
    assert r.message_dicts(strict_roles=True) == [
        {"role": "user", "content": "S"},
        {"role": "assistant", "content": "a"},
    ]
    # The cache key is the request's own: the model identity (strict_roles: true) tells the two apart.
    assert r.key_material()["messages"] == [["system", "S"], ["assistant", "a"]]
