-- GET /v1/subscribers/{id} for SAMPLE people spread evenly over user_000000 … (PEOPLE-1), so a
-- large database is read across its whole key range. Args: PEOPLE SAMPLE SECRET_KEY.
-- Requests are built once in init, as in get.lua: wrk only picks one per request.
function init(args)
  local people, sample = tonumber(args[1]), tonumber(args[2])
  local headers = { ["Authorization"] = "Bearer " .. args[3] }
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
  requests = {}
  for i = 0, sample - 1 do
    requests[i + 1] = wrk.format("GET", string.format("/v1/subscribers/user_%06d", math.floor(i * people / sample)), headers)
  end
  count = sample
end
function request()
  return requests[math.random(1, count)]
end
