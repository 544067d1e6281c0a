// The director's sign-in, on the desk and the hall page: the token is typed once (as the
// console asks a referee for theirs), checked with the service (GET /api/tokens/me) before
// it is kept, and kept for this tab only (js/api.js). A referee's token is refused here by
// name: the desk's doors need a director (clock_service/service/access.py).

import { getDirectorToken, getToken, requestJson, setDirectorToken, useToken } from "./api.js";
import { addStrings, applyI18n, errorText, onLangChange, t } from "./i18n.js";

addStrings({
  en: {
    "desk.title": "Director's desk",
    "signin.needed": "This needs the director: sign in with the director's token.",
    "signin.button": "Sign in",
    "signin.out": "Sign out",
    "signin.title": "Director's sign-in",
    "signin.help": "The director's token (SHOTCLOCK_REFEREE_TOKEN, or one issued as a director's). Kept in this tab only, until it is closed.",
    "signin.token": "Director's token",
    "signin.submit": "Sign in",
    "signin.cancel": "Cancel",
    "signin.as": "Director: {name}",
    "signin.director": "Director",
    "signin.open": "Open service: anyone here may direct",
    "signin.open_title": "This service has no SHOTCLOCK_REFEREE_TOKEN: every page on this network may create tables, issue tokens and start matches.",
    "signin.none": "Not signed in",
    "signin.referee": "This is a referee's token ({name}): directing needs a director's token.",
    "signin.refused": "The service did not accept this token: check it and try again.",
    "signin.offline": "The service cannot be reached: try again when it is back.",
    "signin.empty": "Enter the token.",
  },
  ru: {
    "desk.title": "Пульт главного судьи",
    "signin.needed": "Это может только главный судья: войдите с токеном главного судьи.",
    "signin.button": "Войти",
    "signin.out": "Выйти",
    "signin.title": "Вход главного судьи",
    "signin.help": "Токен главного судьи (SHOTCLOCK_REFEREE_TOKEN или выданный как токен главного судьи). Хранится только в этой вкладке, пока она открыта.",
    "signin.token": "Токен главного судьи",
    "signin.submit": "Войти",
    "signin.cancel": "Отмена",
    "signin.as": "Главный судья: {name}",
    "signin.director": "Главный судья",
    "signin.open": "Открытый сервис: управлять может любой в этой сети",
    "signin.open_title": "На сервисе не задан SHOTCLOCK_REFEREE_TOKEN: любая страница в этой сети может создавать столы, выдавать токены и начинать матчи.",
    "signin.none": "Вход не выполнен",
    "signin.referee": "Это токен судьи стола ({name}): для управления нужен токен главного судьи.",
    "signin.refused": "Сервис не принял этот токен: проверьте его и попробуйте снова.",
    "signin.offline": "Сервис недоступен: попробуйте, когда он вернётся.",
    "signin.empty": "Введите токен.",
  },
});

/** Who a token is to the service: {role: "director"|"open"|"referee"|"refused"|"offline",
 * name}. ``token`` "" asks as nobody (an open service answers "open"). */
export async function whoIs(token) {
  const answer = await requestJson("GET", "/api/tokens/me", undefined, { token });
  if (answer.ok) {
    const me = answer.body || {};
    if (me.id === "open") return { role: "open", name: "" };
    // The service's own token (SHOTCLOCK_REFEREE_TOKEN) has no holder's name.
    return { role: me.role === "director" ? "director" : "referee", name: me.id === "env" ? "" : me.name || "" };
  }
  if (answer.status === 401) return { role: "refused", name: "" };
  if (answer.status === 0) return { role: "offline", name: "" };
  return { role: "refused", name: "", error: errorText((answer.body || {}).error || {}).text };
}

/** The sign-in dialog (#signin-dialog), made here for every page that signs a director in. */
function makeDialog() {
  const dialog = document.createElement("dialog");
  dialog.id = "signin-dialog";
  dialog.setAttribute("aria-labelledby", "signin-title");
  const form = document.createElement("form");
  form.autocomplete = "off";
  form.noValidate = true;
  const part = (tag, props) => Object.assign(document.createElement(tag), props);
  const title = part("h2", { id: "signin-title" });
  title.dataset.i18n = "signin.title";
  const help = part("p", { className: "help" });
  help.dataset.i18n = "signin.help";
  const label = part("label", { htmlFor: "signin-token" });
  label.dataset.i18n = "signin.token";
  const input = part("input", { id: "signin-token", type: "password", autocomplete: "off", spellcheck: false });
  const error = part("p", { className: "signin-error" });
  error.setAttribute("role", "alert");
  const buttons = part("div", { className: "dialog-buttons" });
  const cancel = part("button", { type: "button" });
  cancel.dataset.cancel = "";
  cancel.dataset.i18n = "signin.cancel";
  const submit = part("button", { type: "button", className: "primary" });
  submit.dataset.submit = "";
  submit.dataset.i18n = "signin.submit";
  buttons.append(cancel, submit);
  form.append(title, help, label, input, error, buttons);
  dialog.append(form);
  document.body.append(dialog);
  applyI18n(dialog);
  return dialog;
}

/** The sign-in dialog, the header's "who" and its buttons. ``onChange(who)`` with every
 * change: who.role "director" or "open" may direct. ``deviceToken``: without a director
 * signed in here, the page's requests carry the token kept on the device by the console
 * (the hall: a device given the service's token keeps creating tables as before). */
export function mountSignIn({ who, button, out, onChange, deviceToken = false }) {
  const dialog = makeDialog();
  const offered = () => getDirectorToken() || (deviceToken ? getToken() : "");
  useToken(offered);
  const form = dialog.querySelector("form");
  const input = dialog.querySelector("input");
  const error = dialog.querySelector(".signin-error");
  let current = { role: "none", name: "" };

  function show() {
    const directing = current.role === "director" || current.role === "open";
    who.textContent = current.role === "director" ? (current.name ? t("signin.as", { name: current.name }) : t("signin.director"))
      : current.role === "open" ? t("signin.open") : t("signin.none");
    who.title = current.role === "open" ? t("signin.open_title") : "";
    who.dataset.role = current.role;
    button.classList.toggle("hidden", directing);
    out.classList.toggle("hidden", current.role !== "director");
  }

  async function check() {
    const found = await whoIs(offered());
    if (found.role === "referee" || (found.role === "refused" && getDirectorToken())) {
      setDirectorToken(""); // not a director's any more (revoked, or never was)
    }
    current = found.role === "director" || found.role === "open" ? found : { role: "none", name: "" };
    show();
    onChange(current);
    return found;
  }

  function open(message = "") {
    error.textContent = message;
    input.value = "";
    if (!dialog.open) dialog.showModal();
    input.focus();
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) { error.textContent = t("signin.empty"); return; }
    const found = await whoIs(token);
    if (found.role === "director" || found.role === "open") {
      setDirectorToken(token);
      dialog.close();
      check();
      return;
    }
    error.textContent = found.role === "referee" ? t("signin.referee", { name: found.name })
      : found.role === "offline" ? t("signin.offline") : found.error || t("signin.refused");
  });
  // A plain button, not a submit one: a page's forms keep their one submit button each (the
  // hall's create form); Enter in the token field still submits (one field: implicit).
  dialog.querySelector("[data-submit]").addEventListener("click", () => form.requestSubmit());
  dialog.querySelector("[data-cancel]").addEventListener("click", () => dialog.close());
  button.addEventListener("click", () => open());
  out.addEventListener("click", () => { setDirectorToken(""); check(); });
  onLangChange(show);
  show();
  return { check, open, get who() { return current; } };
}
