-- Lists that grow per attempt (worker ids, errors) are stored as JSON array
-- bodies without brackets ("a","b"), so a script appends with string
-- concatenation and never decodes or re-encodes JSON (cjson corrupts `[]` and
-- large numbers).
local function appendFragment(current, item)
  if not current or current == '' then
    return item
  end
  return current .. ',' .. item
end
