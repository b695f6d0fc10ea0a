from apps.common.json_pointer import escaped, pointer, unescaped


def test_a_token_with_a_tilde_or_a_slash_is_escaped_and_read_back():
    assert pointer(["a/b", "m~n", 0]) == "/a~1b/m~0n/0"
    assert [unescaped(t) for t in "/a~1b/m~0n/0".split("/")[1:]] == ["a/b", "m~n", "0"]
    assert unescaped(escaped("~1")) == "~1"
    assert pointer([]) == ""
