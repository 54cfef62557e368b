"""Reading the key a script touched off the line the server names (no server needed)."""

from __future__ import annotations

from contend.servers.lua_keys import keys_at, refused_line

SCRIPT = """
local stats = ARGV[3] .. ':grants'
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.call('INCR', stats)
    redis.call("HSET", 'locks:' .. KEYS[1], 'owner', ARGV[1])
    redis.call('RENAME', KEYS[1], ARGV[4])
    redis.pcall('MSET', 'a', ARGV[1], "b", ARGV[2])
    redis.call('DEL', KEYS[1], unknown_variable)
end
"""
KEYS = ["{lock}"]
ARGV = ["token", "1000", "app", "{lock}:old"]


def test_the_line_number_comes_from_the_servers_error():
    assert (
        refused_line(
            "ERR Error running script (call to f_ab): @user_script:4: @user_script: 4: Lua script attempted to access a non local key in a cluster node"
        )
        == 4
    )
    assert (
        refused_line(
            "ERR Script attempted to access a non local key in a cluster node script: ab, on @user_script:7."
        )
        == 7
    )
    assert refused_line("CROSSSLOT Keys in request don't hash to the same slot") is None


def test_keys_are_worked_out_from_literals_keys_argv_and_locals():
    assert keys_at(SCRIPT, 4, KEYS, ARGV).keys == ("app:grants",)  # a local, from ARGV and a literal
    line = keys_at(SCRIPT, 5, KEYS, ARGV)
    assert line.keys == ("locks:{lock}",) and line.text.startswith('redis.call("HSET"')
    assert keys_at(SCRIPT, 6, KEYS, ARGV).keys == ("{lock}", "{lock}:old"), "both keys of RENAME"
    assert keys_at(SCRIPT, 7, KEYS, ARGV).keys == ("a", "b"), "every other argument of MSET, pcall too"


def test_what_cannot_be_worked_out_is_left_out_and_the_line_is_still_given():
    line = keys_at(SCRIPT, 8, KEYS, ARGV)
    assert line.keys == ("{lock}",) and "unknown_variable" in line.text
    assert keys_at(SCRIPT, 99, KEYS, ARGV) is None
    assert keys_at("return redis.call('GET',\n KEYS[1])", 1, KEYS, ARGV).keys == (), "a call across lines"
