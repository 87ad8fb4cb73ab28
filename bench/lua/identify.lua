-- POST /v1/identify, a new person each time on the rename path: an anonymous id seeded by
-- sqlite_ceiling (never identified) and a new external id. Args: ANON_BASE STRIDE CLIENT_KEY RUN.
-- Thread t renames anon ids ANON_BASE + t*STRIDE + 1, 2, ...; run.sh sizes STRIDE so no id repeats.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  base = tonumber(args[1]) + tid * tonumber(args[2])
  headers = { ["Authorization"] = "Bearer " .. args[3], ["Content-Type"] = "application/json" }
  run = args[4]
  n = 0
end
function request()
  n = n + 1
  local body = string.format('{"externalId":"p-%s-%d-%d","anonymousId":"anon_%021d"}', run, tid, n, base + n)
  return wrk.format("POST", "/v1/identify", headers, body)
end
