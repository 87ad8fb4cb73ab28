-- POST /v1/identify, a new person each time on the rename path: an anonymous id seeded by
-- sqlite_ceiling (never identified) and a new external id. Args: ANON_BASE STRIDE CLIENT_KEY RUN.
-- Thread t renames anon ids ANON_BASE + t*STRIDE + 1, 2, ...; run.sh sizes STRIDE so no id repeats.
--
-- Every request of the stride is formatted once, in init (before wrk starts its clock), as
-- get.lua does: formatting a body and a request in Lua on every call cost wrk CPU on every
-- identify, taken from the two cores the server runs on (renames a second, alternated on the same
-- seed: 33.7k / 35.8k / 34.2k formatted per call, 37.4k / 37.7k / 37.0k in init). Past the stride a
-- request is formatted on the fly as before; its ids are the next thread's, and run.sh warns
-- that the span ran out.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

local function format(n)
  local body = string.format('{"externalId":"p-%s-%d-%d","anonymousId":"anon_%021d"}', run, tid, n, base + n)
  return wrk.format("POST", "/v1/identify", headers, body)
end

function init(args)
  base = tonumber(args[1]) + tid * tonumber(args[2])
  headers = { ["Authorization"] = "Bearer " .. args[3], ["Content-Type"] = "application/json" }
  run = args[4]
  prepared = {}
  for i = 1, tonumber(args[2]) do prepared[i] = format(i) end
  n = 0
end

function request()
  n = n + 1
  return prepared[n] or format(n)
end
