-- GET /v1/subscribers/{id} for seeded people user_000000 … (PEOPLE-1). Args: PEOPLE SECRET_KEY
-- [walk|random] [PATH_FORMAT].
-- Every request string is built once, in init: per request wrk only picks one at random, so the
-- load generator (on the same two cores as the server) spends about what it does for /healthz
-- instead of formatting a request in Lua each time. With `walk`, each thread asks for every
-- person in turn instead: a warm-up that leaves nobody out of the snapshot cache. PATH_FORMAT
-- (default "/v1/subscribers/user_%06d") sends another path the same way: run.sh sends
-- "/healthz?person=user_%06d" (/healthz ignores the query and the key), so wrk pays for that
-- /healthz what it pays for a GET, and the two differ by what the server does for them.
function init(args)
  local people = tonumber(args[1])
  local headers = { ["Authorization"] = "Bearer " .. args[2] }
  local path_format = args[4] or "/v1/subscribers/user_%06d"
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
  requests = {}
  for i = 0, people - 1 do
    requests[i + 1] = wrk.format("GET", string.format(path_format, i), headers)
  end
  count = people
  walking = args[3] == "walk"
  walked = 0
end
function request()
  if walking then
    walked = walked % count + 1
    return requests[walked]
  end
  return requests[math.random(1, count)]
end
