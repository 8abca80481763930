/**
 * The consent page of an agent's OAuth request (/authorize, server/agents/oauth/consent.py): the
 * sign-in, and the person's Allow or Deny, sent as JSON with the session cookie to
 * /authorize/decision; the browser then goes where the answer says (the agent's redirect URI).
 */
const said = /** @type {HTMLElement} */ (document.querySelector(".consent-status"));

/**
 * POST `body` as JSON to `path`: the answer's JSON, or an Error carrying its sentence.
 * @param {string} path
 * @param {object} body
 * @returns {Promise<any>}
 */
async function post(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error || `The server answered ${response.status}.`);
  return answer;
}

/** @param {string} sentence */
function tell(sentence) {
  said.textContent = sentence;
}

const signIn = /** @type {HTMLFormElement | null} */ (document.querySelector(".consent-sign-in"));
signIn?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(signIn);
  try {
    await post("/auth/sign-in", { username: form.get("username"), password: form.get("password") });
    location.reload();
  } catch (error) {
    tell(/** @type {Error} */ (error).message);
  }
});

document.querySelector(".consent-sign-out")?.addEventListener("click", async () => {
  try {
    await post("/auth/sign-out", {});
    location.reload();
  } catch (error) {
    tell(/** @type {Error} */ (error).message);
  }
});

const decision = /** @type {HTMLFormElement | null} */ (document.querySelector(".consent-decision"));
decision?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const choice = /** @type {HTMLButtonElement | null} */ (/** @type {SubmitEvent} */ (event).submitter)?.value;
  if (choice !== "allow" && choice !== "deny") return;
  for (const button of decision.querySelectorAll("button")) button.disabled = true;
  tell(choice === "allow" ? "Allowed: sending you back to the agent…" : "Denied: telling the agent…");
  try {
    const { redirect } = await post("/authorize/decision", { request: location.search.slice(1), decision: choice });
    location.assign(redirect);
  } catch (error) {
    tell(/** @type {Error} */ (error).message);
    for (const button of decision.querySelectorAll("button")) button.disabled = false;
  }
});
