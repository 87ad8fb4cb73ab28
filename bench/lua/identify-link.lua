-- POST /v1/identify, a new person each time on the link path: a new external id and an
-- anonymous id never seen, so each call creates a subscriber and links an alias (with a webhook
-- subscribed: subscriber.created and subscriber.merged in the outbox). Args: CLIENT_KEY RUN.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  headers = { ["Authorization"] = "Bearer " .. args[1], ["Content-Type"] = "application/json" }
  run = args[2]
  n = 0
end
function request()
  n = n + 1
  local body = string.format('{"externalId":"w-%s-%d-%d","anonymousId":"anon_%s%02d%016d"}', run, tid, n,
    string.sub(run .. "xxx", 1, 3), tid, n)
  return wrk.format("POST", "/v1/identify", headers, body)
end
