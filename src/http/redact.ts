/** Query parameters whose name says they carry a credential (`api_key`, `access_token`,
 * `client_secret`, `password`, `sig`…): their values never reach the log. */
const credentialName = /key|token|secret|pass|pwd|auth|cred|sig|session|jwt|bearer/i

/** An API key as `npm run keys` issues it; its prefix identifies it and may be logged. */
const issuedKey = /\b(pet_[0-9a-f]{8}_)[A-Za-z0-9_-]+/g

/** A webhook signing secret, as createWebhook answers it (`whsec_` and Base64). */
const webhookSecret = /\bwhsec_[A-Za-z0-9+/]+=*/g

const censor = '[redacted]'

/** What any URL to redact holds: a credential-like name, an issued key's `pet_`, a webhook
 * secret's `whsec_`, or an escape. */
const mayHoldCredential = new RegExp(`${credentialName.source}|pet_|whsec_|%`, 'i')

/**
 * A request URL as the access log may keep it: without the value of a credential-like query
 * parameter, an issued API key, a webhook secret or a key of API_KEYS, wherever in the URL the client put them,
 * percent-encoded or not.
 */
export function redactUrl(url: string, secrets: readonly string[]): string {
  // (most URLs hold nothing of the kind: every request's log line asks)
  if (!mayHoldCredential.test(url) && !secrets.some((secret) => url.includes(secret))) return url
  const query = url.indexOf('?')
  let safe = query === -1 ? url : url.slice(0, query + 1) + redactQuery(url.slice(query + 1))
  safe = redactSecrets(safe, secrets)
  // A secret that only shows once decoded (%70et_…) is a secret too: then the decoded URL is logged.
  if (safe.includes('%')) {
    const decoded = decodeOrUndefined(safe)
    if (decoded !== undefined && redactSecrets(decoded, secrets) !== decoded) return redactSecrets(decoded, secrets)
  }
  return safe
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=')
      if (equals === -1) return pair
      const name = decodeOrUndefined(pair.slice(0, equals)) ?? pair.slice(0, equals)
      return credentialName.test(name) ? `${pair.slice(0, equals + 1)}${censor}` : pair
    })
    .join('&')
}

function redactSecrets(text: string, secrets: readonly string[]): string {
  let safe = text.replace(issuedKey, `$1${censor}`).replace(webhookSecret, `whsec_${censor}`)
  for (const secret of secrets) if (safe.includes(secret)) safe = safe.replaceAll(secret, censor)
  return safe
}

function decodeOrUndefined(text: string): string | undefined {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}
