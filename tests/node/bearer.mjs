// Preloaded (`node --import ./bearer.mjs`): every HTTP request this node process makes
// carries `Authorization: Bearer $TOOLHUB_BEARER`, unless it has an Authorization header
// of its own. The conformance suite's CLI takes no headers, and ToolHub's /mcp wants an
// agent token: this is how an operator's proxy would add one. It goes through undici's
// global dispatcher, which node's fetch and undici's own `request` both use.
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.TOOLHUB_BEARER;

function withBearer(headers) {
  if (Array.isArray(headers)) {
    // Flat [name, value, name, value, ...] or [[name, value], ...].
    const pairs = Array.isArray(headers[0]) ? headers.flat() : headers;
    for (let i = 0; i < pairs.length; i += 2) {
      if (String(pairs[i]).toLowerCase() === "authorization") return headers;
    }
    return [...pairs, "authorization", `Bearer ${token}`];
  }
  const own = { ...(headers || {}) };
  if (Object.keys(own).some((name) => name.toLowerCase() === "authorization")) return own;
  return { ...own, authorization: `Bearer ${token}` };
}

if (token) {
  const bearer = (dispatch) => (options, handler) =>
    dispatch({ ...options, headers: withBearer(options.headers) }, handler);
  setGlobalDispatcher(new Agent().compose(bearer));
}
