-- wrk script: governed invoke of search_orders, a new task per request so that neither the
-- loop guard nor a task budget refuses the repeated call.
local counter = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  prefix = "bench-" .. tostring(id) .. "-"
end

request = function()
  counter = counter + 1
  local body = '{"task_id":"' .. prefix .. counter .. '","call":{"id":"c1","name":"search_orders",' ..
    '"arguments":"{\\"status\\":\\"paid\\",\\"start_date\\":\\"2026-01-01\\",' ..
    '\\"end_date\\":\\"2026-03-31\\",\\"limit\\":20}"}}'
  return wrk.format("POST", "/api/v1/invoke", nil, body)
end

response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"status":"ok"', 1, true) then
    errors_seen = (errors_seen or 0) + 1
    if errors_seen < 3 then print("unexpected answer: " .. status .. " " .. body) end
  end
end
