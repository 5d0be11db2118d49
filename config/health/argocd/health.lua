-- Argo CD health check for advisor.kubevirt.io/v1alpha1 VirtPlatformConfig.
-- Install: config/health/argocd/README.md. Phase by phase: docs/health.md.
local hs = {}

local function condition(conditions, t)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == t then
      return c
    end
  end
  return nil
end

local function isTrue(conditions, t)
  local c = condition(conditions, t)
  return c ~= nil and c.status == "True"
end

local st = obj.status
if st == nil or st.phase == nil or st.phase == "" then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to draft a plan"
  return hs
end

local generation = obj.metadata.generation
if generation ~= nil and (st.observedGeneration == nil or st.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to act on generation " .. tostring(generation)
  return hs
end

-- Every phase writes its reason and message on the Ready condition, True or False.
local ready = condition(st.conditions, "Ready")
local message = st.phase
if ready ~= nil and ready.message ~= nil and ready.message ~= "" then
  message = st.phase .. ": " .. ready.message
end
hs.message = message

local phase = st.phase
local action = "DryRun"
if obj.spec ~= nil and obj.spec.action ~= nil then
  action = obj.spec.action
end

if phase == "Completed" or phase == "CompletedWithUpgrade" then
  hs.status = "Healthy"
elseif phase == "Pending" or phase == "Drafting" or phase == "InProgress" then
  hs.status = "Progressing"
elseif phase == "ReviewRequired" then
  if action == "Apply" then
    -- Apply was asked for, and the plan waits for an approval that matches it.
    hs.status = "Degraded"
  else
    -- DryRun: the plan is drafted and shown, which is all DryRun asks.
    hs.status = "Suspended"
  end
elseif phase == "Drifted" then
  if isTrue(st.conditions, "Reconciling") then
    -- bypassOptimisticLock: the operator re-applies the plan by itself.
    hs.status = "Progressing"
  else
    hs.status = "Degraded"
  end
elseif phase == "Failed" or phase == "CompletedWithErrors" or phase == "PrerequisiteFailed" then
  hs.status = "Degraded"
elseif phase == "Ignored" or phase == "Reverted" then
  hs.status = "Suspended"
else
  hs.status = "Progressing"
end
return hs
