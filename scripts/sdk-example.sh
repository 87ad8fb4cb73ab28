#!/usr/bin/env bash
# The SDK's example against a real `buzzkit serve`: a device goes anonymous → identified → logged
# out, and the server is asked what it saw (verified person, the anonymous id as its alias, no push
# subscription left after logout, the events on the timeline, the fresh anonymous id holding the token).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUZZKIT_BIN_DIR:-.build/debug}
[ -x "$BIN/buzzkit-example" ] || swift build --product buzzkit-example
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

"$BIN/buzzkit" tenant create sdk-example --database "$dir/db.sqlite" > "$dir/tenant.json"
field() { python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$dir/tenant.json" "$1"; }
client=$(field clientKey); secret=$(field secretKey); isec=$(field identitySecret)
echo '{"logLevel": "warn"}' > "$dir/config.json"
"$BIN/buzzkit" serve --port 0 --database "$dir/db.sqlite" --config "$dir/config.json" > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 200); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$dir/out" | head -1)
hash=$("$BIN/buzzkit" identity-hash --secret "$isec" user_ci)

"$BIN/buzzkit-example" --base-url "$url" --client-key "$client" --user user_ci --identity-hash "$hash" \
  --storage "$dir/device" | tee "$dir/example.txt"

python3 - "$url" "$secret" "$dir/example.txt" <<'PY'
import json, re, sys, urllib.request
url, secret, transcript = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
def get(path):
    request = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + secret})
    return json.load(urllib.request.urlopen(request))["data"]
first = re.search(r"1\. anonymous: (anon_\S+)", transcript).group(1)
fresh = re.search(r"3\. logged out: new anonymous id (anon_\S+)", transcript).group(1)
person = get("/v1/subscribers/user_ci")["subscriber"]
assert person["verified"] is True, person
assert person["aliases"] == [first], person["aliases"]
assert person["pushSubscriptions"] == [], "logout deleted the push subscription"
assert person["attributes"].get("plan") == "pro", person["attributes"]
names = [e["name"] for e in get("/v1/subscribers/user_ci/events?limit=100")["events"]]
for expected in ["$session.start", "onboarding_started", "$subscriber.merged", "signed_up"]:
    assert expected in names, (expected, names)
guest = get("/v1/subscribers/" + fresh)["subscriber"]
assert fresh != first and guest["anonymous"] is True
assert len(guest["pushSubscriptions"]) == 1, guest
assert [e["name"] for e in get("/v1/subscribers/%s/events" % fresh)["events"]] == ["browsing_after_logout"]
print("sdk example: anonymous %s → user_ci (verified, alias kept) → logged out as %s: ok" % (first, fresh))
PY
