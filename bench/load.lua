-- wrk script of `make bench`: one kind of request per run, chosen by the first script
-- argument (after `--`):
--   search                 governed invoke of search_orders, a new task per request
--   cancel <first> <range>       governed invoke of cancel_order, a new task and order per request
--   bare_cancel <first> <range>  the shop's ungoverned POST /demo/orders/cancel, a new order per request
--   replay <body>                the same governed invoke again and again (a committed key)
--   call <call>                  a governed invoke of this call (JSON), a new task per request
--   mcp <params> <expected>      an MCP tools/call with these params (JSON) to the URL's path (its
--                                session in the headers), a new JSON-RPC id and X-ToolHub-Task per
--                                request; the answer must contain <expected>
-- Task ids are random, as real ones are, so the ledger's key indexes see random inserts.
-- Thread n cancels orders first + (n - 1) * range onwards, at most range of them, so no
-- order is cancelled twice.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  kind = args[1]
  math.randomseed(os.time() * 1000 + id)
  if kind == "cancel" or kind == "bare_cancel" then
    order_range = tonumber(args[3])
    first_order = tonumber(args[2]) + (id - 1) * order_range
  elseif kind == "replay" then
    fixed_body = args[2]
  elseif kind == "call" then
    fixed_call = args[2]
  elseif kind == "mcp" then
    fixed_params = args[2]
  end
  expected = ({search = '"status":"ok"', cancel = '"status":"ok"', bare_cancel = '"status":"cancelled"',
               replay = '"cached":true', call = '"status":"ok"', mcp = args[3]})[kind]
  if expected == nil then error("unknown kind " .. tostring(kind)) end
end

local function task_id()
  return string.format("t%08x%08x-%d-%d", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff), id, counter)
end

local function next_order()
  if counter > order_range then error("thread " .. id .. " ran out of orders to cancel") end
  return string.format("ORD-%06d", first_order + counter - 1)
end

request = function()
  counter = counter + 1
  local body
  if kind == "search" then
    body = '{"task_id":"' .. task_id() .. '","call":{"id":"c1","name":"search_orders",' ..
      '"arguments":"{\\"status\\":\\"paid\\",\\"start_date\\":\\"2026-01-01\\",' ..
      '\\"end_date\\":\\"2026-03-31\\",\\"limit\\":20}"}}'
    return wrk.format("POST", "/api/v1/invoke", nil, body)
  elseif kind == "cancel" then
    body = '{"task_id":"' .. task_id() .. '","call":{"id":"c1","name":"cancel_order",' ..
      '"arguments":"{\\"order_id\\":\\"' .. next_order() .. '\\",\\"reason\\":\\"customer_request\\"}"}}'
    return wrk.format("POST", "/api/v1/invoke", nil, body)
  elseif kind == "bare_cancel" then
    body = '{"user_id":"u-bench","order_id":"' .. next_order() .. '","reason":"customer_request"}'
    return wrk.format("POST", "/demo/orders/cancel", nil, body)
  elseif kind == "call" then
    body = '{"task_id":"' .. task_id() .. '","call":' .. fixed_call .. '}'
    return wrk.format("POST", "/api/v1/invoke", nil, body)
  elseif kind == "mcp" then
    local headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
    headers["X-ToolHub-Task"] = task_id()
    -- Threads share one MCP session: an id is unique among their requests in flight.
    body = '{"jsonrpc":"2.0","id":"' .. id .. '-' .. counter .. '","method":"tools/call","params":' ..
      fixed_params .. '}'
    return wrk.format("POST", nil, headers, body)
  end
  return wrk.format("POST", "/api/v1/invoke", nil, fixed_body)
end

response = function(status, headers, body)
  if status ~= 200 or not string.find(body, expected, 1, true) then
    errors_seen = (errors_seen or 0) + 1
    if errors_seen < 3 then print("unexpected answer: " .. status .. " " .. body) end
  end
end
