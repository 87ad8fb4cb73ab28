-- POST /v1/events: batches of 50 new events on a random seeded person. Args: PEOPLE CLIENT_KEY RUN.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  people = tonumber(args[1])
  headers = { ["Authorization"] = "Bearer " .. args[2], ["Content-Type"] = "application/json" }
  run = args[3]
  n = 0
  math.randomseed(os.time() + tid)
end
function request()
  n = n + 1
  local parts = {}
  for k = 1, 50 do
    parts[k] = string.format('{"id":"w%s-%d-%d-%d","name":"screen_view","properties":{"screen":"home","index":7}}',
      run, tid, n, k)
  end
  local body = string.format('{"subscriberId":"user_%06d","events":[%s]}', math.random(0, people - 1),
    table.concat(parts, ","))
  return wrk.format("POST", "/v1/events", headers, body)
end
