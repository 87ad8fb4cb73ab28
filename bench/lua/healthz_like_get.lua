-- GET /healthz sent the way lua/get.lua sends its GETs: one request string per seeded person,
-- built once in init (`/healthz?person=user_000000` …, with the same Authorization header), one
-- picked at random per request. Args: PEOPLE SECRET_KEY.
--
-- /healthz ignores the query and the key, so the server answers exactly as for a bare /healthz;
-- what changes is wrk's side. A cached GET beside this pays the load generator what it pays
-- here (a Lua call, a random pick among PEOPLE strings of the same length), so the two differ
-- by what the server does for them and by the answers' sizes.
function init(args)
  local people = tonumber(args[1])
  local headers = { ["Authorization"] = "Bearer " .. args[2] }
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
  requests = {}
  for i = 0, people - 1 do
    requests[i + 1] = wrk.format("GET", string.format("/healthz?person=user_%06d", i), headers)
  end
  count = people
end
function request()
  return requests[math.random(1, count)]
end
