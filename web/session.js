/**
 * Sign-in in the page header: one session (an HttpOnly cookie) for the CMS, plugin visibility
 * and every tool call. After a change it asks the AI Tools plugin to offer what the user can
 * see now, and tells other panels through a `reactor:session` event on window.
 */
const box = document.getElementById("session");

async function currentUser() {
  // /auth/session, not /auth/me: a signed-out visit answers 200 {user: null}, no 401 in the console.
  const response = await fetch("/auth/session");
  return response.ok ? (await response.json()).user : null;
}

function changed(user) {
  draw(user);
  window.dispatchEvent(new CustomEvent("reactor:session", { detail: user }));
  window.reactor.ready.then(() => window.reactor.listCommands()).then((commands) => {
    if (commands.some((c) => c.id === "aiTools.refresh")) return window.reactor.executeCommand("aiTools.refresh");
  }).catch((error) => console.warn(error.message));
}

function draw(user) {
  if (user) {
    const who = Object.assign(document.createElement("span"), { textContent: `Signed in as ${user.username}` });
    who.dataset.testid = "signed-in-as";
    const out = Object.assign(document.createElement("button"), { type: "button", textContent: "Sign out" });
    out.addEventListener("click", async () => {
      await fetch("/auth/sign-out", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      changed(null);
    });
    box.replaceChildren(who, out);
    return;
  }
  const form = document.createElement("form");
  const name = Object.assign(document.createElement("input"), { name: "username", placeholder: "user", autocomplete: "username" });
  const password = Object.assign(document.createElement("input"), { name: "password", type: "password", placeholder: "password", autocomplete: "current-password" });
  const submit = Object.assign(document.createElement("button"), { type: "submit", textContent: "Sign in" });
  const error = Object.assign(document.createElement("span"), { className: "session-error", role: "alert" });
  form.append(name, password, submit, error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await fetch("/auth/sign-in", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: name.value, password: password.value }),
    });
    const answer = await response.json();
    if (response.ok) changed(answer.user);
    else error.textContent = answer.error;
  });
  box.replaceChildren(form);
}

currentUser().then(draw, () => draw(null));

// Other parts of the page use this one sign-in (the `session` view): the palette's "CMS: Sign in"
// brings this form forward; a sign-out made elsewhere (the palette's "CMS: Sign out") is drawn here
// and told to the rest of the page like one made here.
window.reactor.defineView("session", (state) => {
  if (state.signedIn === false) {
    changed(null);
    return;
  }
  const name = /** @type {HTMLInputElement | null} */ (box.querySelector("input[name=username]"));
  if (state.signIn && name) {
    box.scrollIntoView({ block: "nearest" });
    name.focus();
  }
});
