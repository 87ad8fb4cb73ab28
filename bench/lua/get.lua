-- GET /v1/subscribers/{id} for seeded people user_000000 … (PEOPLE-1). Args: PEOPLE SECRET_KEY.
-- Every request string is built once, in init: per request wrk only picks one at random, so the
-- load generator (on the same two cores as the server) spends about what it does for /healthz
-- instead of formatting a request in Lua each time.
function init(args)
  local people = tonumber(args[1])
  local headers = { ["Authorization"] = "Bearer " .. args[2] }
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
  requests = {}
  for i = 0, people - 1 do
    requests[i + 1] = wrk.format("GET", string.format("/v1/subscribers/user_%06d", i), headers)
  end
  count = people
end
function request()
  return requests[math.random(1, count)]
end
