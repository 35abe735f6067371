# An independent implementation of spec/PROTOCOL.md §1.8 (the binary body
# layout), used to derive spec/vectors/binary.json from the spec's tables.
import json

CODES = {"connect":1,"welcome":2,"ping":3,"pong":4,"refresh":5,"refreshed":6,"request":0x10,"response":0x11,
         "subscribe":0x20,"subscribed":0x21,"unsubscribe":0x22,"unsubscribed":0x23,"publication":0x24,"reconnect":0x30,"error":0xFF}

def uint(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        if n: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def s(x): b = x.encode(); return uint(len(b)) + b
def j(v): t = json.dumps(v, separators=(",", ":"), ensure_ascii=False); return s(t)
def jt(text): return s(text)
def flags(*p): return uint(sum(1 << i for i, x in enumerate(p) if x))

def body(m):
    t = m["type"]
    if t == "connect":
        return flags("token" in m, "session" in m) + uint(m["protocol"]) + (s(m["token"]) if "token" in m else b"") + (s(m["session"]) if "session" in m else b"")
    if t in ("ping", "pong"): return b""
    if t == "refresh": return s(m["token"])
    if t == "request":
        return flags("idem" in m, "timeout_ms" in m) + uint(m["id"]) + s(m["method"]) + j(m.get("params")) + (s(m["idem"]) if "idem" in m else b"") + (uint(m["timeout_ms"]) if "timeout_ms" in m else b"")
    if t == "subscribe":
        return flags("since" in m, "token" in m) + s(m["channel"]) + ((s(m["since"]["epoch"]) + uint(m["since"]["offset"])) if "since" in m else b"") + (s(m["token"]) if "token" in m else b"")
    if t == "unsubscribe": return s(m["channel"])
    if t == "welcome":
        return flags("ping_interval_ms" in m, "pacing" in m, "expires_in_ms" in m) + s(m["session"]) + uint(m["protocol"]) + (uint(m["ping_interval_ms"]) if "ping_interval_ms" in m else b"") + ((uint(m["pacing"]["period_ms"]) + uint(m["pacing"]["phase_ms"])) if "pacing" in m else b"") + (uint(m["expires_in_ms"]) if "expires_in_ms" in m else b"")
    if t == "refreshed": return flags("expires_in_ms" in m) + (uint(m["expires_in_ms"]) if "expires_in_ms" in m else b"")
    if t == "response":
        if "result" in m: return uint(m["id"]) + b"\x00" + j(m["result"])
        return uint(m["id"]) + b"\x01" + err(m["error"])
    if t == "subscribed": return s(m["channel"]) + s(m["epoch"]) + uint(m["offset"]) + bytes([1 if m.get("recovered") else 0])
    if t == "unsubscribed": return s(m["channel"]) + s(m["code"]) + s(m.get("reason", ""))
    if t == "publication": return s(m["channel"]) + s(m["epoch"]) + uint(m["offset"]) + j(m["data"])
    if t == "reconnect": return flags("message" in m) + s(m["reason"]) + uint(m["min_delay_ms"]) + uint(m["max_delay_ms"]) + (s(m["message"]) if "message" in m else b"")
    if t == "error": return err({k: v for k, v in m.items() if k != "type"})
    raise ValueError(t)
def err(e): return flags("retry_after_ms" in e) + s(e["code"]) + s(e.get("message", "")) + (uint(e["retry_after_ms"]) if "retry_after_ms" in e else b"")
def frame(m): return CODES[m["type"]].to_bytes(2, "big") + body(m)

C = "client"; S = "server"
msgs = [
 ("connect_minimal", C, {"type":"connect","protocol":1}),
 ("connect_token_and_session", C, {"type":"connect","protocol":1,"token":"t0k","session":"s-7f3a"}),
 ("ping_client", C, {"type":"ping"}),
 ("pong_client", C, {"type":"pong"}),
 ("refresh", C, {"type":"refresh","token":"new"}),
 ("request_minimal", C, {"type":"request","id":1,"method":"echo","params":None}),
 ("request_full", C, {"type":"request","id":300,"method":"orders.create","params":{"qty":2,"sku":"A-1"},"idem":"k-17","timeout_ms":10000}),
 ("subscribe_first", C, {"type":"subscribe","channel":"news"}),
 ("subscribe_resume_with_token", C, {"type":"subscribe","channel":"private:42","since":{"epoch":"e1","offset":128},"token":"st"}),
 ("unsubscribe", C, {"type":"unsubscribe","channel":"news"}),
 ("welcome_minimal", S, {"type":"welcome","session":"s-7f3a","protocol":1}),
 ("welcome_full", S, {"type":"welcome","session":"s-7f3a","protocol":1,"ping_interval_ms":25000,"pacing":{"period_ms":20000,"phase_ms":7350},"expires_in_ms":3600000}),
 ("ping_server", S, {"type":"ping"}),
 ("pong_server", S, {"type":"pong"}),
 ("refreshed_with_expiry", S, {"type":"refreshed","expires_in_ms":60000}),
 ("refreshed_without", S, {"type":"refreshed"}),
 ("response_result", S, {"type":"response","id":300,"result":{"order":"o-1"}}),
 ("response_null_result", S, {"type":"response","id":2,"result":None}),
 ("response_error", S, {"type":"response","id":7,"error":{"code":"unavailable","message":"try later","retry_after_ms":1500}}),
 ("subscribed_recovered", S, {"type":"subscribed","channel":"news","epoch":"e1","offset":128,"recovered":True}),
 ("subscribed_fresh", S, {"type":"subscribed","channel":"news","epoch":"e1","offset":0,"recovered":False}),
 ("unsubscribed", S, {"type":"unsubscribed","channel":"news","code":"unavailable","reason":"broker down"}),
 ("publication", S, {"type":"publication","channel":"news","epoch":"e1","offset":129,"data":{"text":"hi","n":[1,2,3]}}),
 ("publication_unicode", S, {"type":"publication","channel":"чат","epoch":"e1","offset":1,"data":"日本"}),
 ("reconnect_with_message", S, {"type":"reconnect","reason":"deploy","min_delay_ms":2000,"max_delay_ms":12000,"message":"back soon"}),
 ("reconnect_plain", S, {"type":"reconnect","reason":"transport","min_delay_ms":0,"max_delay_ms":0}),
 ("error", S, {"type":"error","code":"bad_request","message":"unknown type"}),
]
out = {"description": "Binary codec vectors (spec/PROTOCOL.md §1.8): every message type, each as its binary frame (hex) and its JSON frame, which decode to the same message, and which it encodes to exactly; then binary frames that do not decode, and why. Derived from the spec's layout tables by an implementation independent of the Rust and TypeScript ones. Format: spec/vectors/README.md, binary.json.",
       "messages": [], "decode_errors": []}
for name, d, m in msgs:
    out["messages"].append({"name": name, "direction": d, "json": json.dumps(m, separators=(",", ":"), ensure_ascii=False), "hex": frame(m).hex()})

def kind(t): return t
E = out["decode_errors"]
def inv(k): return {"error": "invalid", "kind": k}
E.append({"name":"empty", "direction": S, "hex": "", "error": {"error":"missing_type"}})
E.append({"name":"one_byte", "direction": C, "hex": "00", "error": {"error":"missing_type"}})
E.append({"name":"unknown_code_is_skipped", "direction": S, "hex": "12340102", "error": {"error":"unknown_type","ty":"0x1234"}})
E.append({"name":"truncated_string", "direction": S, "hex": (0x24).to_bytes(2,"big").hex() + "046e65", "error": inv("publication")})
E.append({"name":"length_past_the_frame", "direction": S, "hex": "0024" + "ffffffff0f", "error": inv("publication")})
E.append({"name":"uint_not_shortest", "direction": C, "hex": "0022" + "8000", "error": inv("unsubscribe")})
E.append({"name":"uint_past_2_64", "direction": S, "hex": "0011" + "ffffffffffffffffff7f" + "00" + "046e756c6c", "error": inv("response")})
E.append({"name":"uint_longer_than_10_bytes", "direction": S, "hex": "0011" + "8080808080808080808001", "error": inv("response")})
E.append({"name":"string_not_utf8", "direction": C, "hex": "0022" + "02c328", "error": inv("unsubscribe")})
E.append({"name":"bool_not_0_or_1", "direction": S, "hex": "0021" + "046e657773" + "026531" + "00" + "02", "error": inv("subscribed")})
E.append({"name":"reply_tag_unknown", "direction": S, "hex": "0011" + "01" + "02", "error": inv("response")})
E.append({"name":"payload_not_json", "direction": S, "hex": "0024" + "046e657773" + "026531" + "01" + "027b7d"[:0] + "017b", "error": inv("publication")})
E.append({"name":"client_message_sent_to_the_client", "direction": S, "hex": "0022046e657773", "error": inv("unsubscribe")})
E.append({"name":"server_message_sent_to_the_server", "direction": C, "hex": "0003"[:0] + "0024" + "046e657773" + "026531" + "01" + "046e756c6c", "error": inv("publication")})
out["decode_ok_extensions"] = [
  {"name":"trailing_bytes_are_ignored", "direction": C, "hex": "0022046e657773" + "ffee", "json": "{\"type\":\"unsubscribe\",\"channel\":\"news\"}"},
  {"name":"unknown_flag_bits_are_ignored", "direction": S, "hex": "0006" + "04", "json": "{\"type\":\"refreshed\"}"},
]
print(json.dumps(out, indent=1, ensure_ascii=False))
