import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { type Static, Type } from '@sinclair/typebox'
import { Ajv, type Options, type ValidateFunction } from 'ajv'
import { OperatorError } from './errors.js'
import { generatedDir, loadGenerated } from './paths.js'

/** A token68 (RFC 7235): what a client can send after `Bearer `. */
const token = '[A-Za-z0-9._~+/-]+=*'

/** A role's name, as openapi.yaml's x-roles write them (`pets:read`). */
const role = '[a-z][a-z_]*:[a-z][a-z_]*'
/** An entry of API_KEYS: a key, and its roles after a `:`, joined by `+` (which roles exist is
 * the spec's to say: checked when the server starts). */
const keyEntry = `${token}(:${role}(\\+${role})*)?`

/** An origin as a browser sends it (`https://app.example.com:8443`), at most 200 characters:
 * openapi.yaml promises that length for Access-Control-Allow-Origin. */
const origin = '[A-Za-z][A-Za-z0-9+.-]*://[^/\\s,]{1,180}'

/** A comma-separated list of `item`, blanks around the commas allowed, empty items ignored. */
const listOf = (item: string) => `^\\s*(${item})?\\s*(,\\s*(${item})?\\s*)*$`

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/**
 * Whether traces are wanted: an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or the traces'
 * own OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not `true`. Only this switch
 * is read here: OpenTelemetry's SDK reads every OTEL_* variable itself, the standard way
 * (src/ops/tracing.ts; docs/operating.md lists them), so none is in the schema below.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  const endpoint = (name: string) => (env[name] ?? '').trim() !== ''
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true'
  return !disabled && (endpoint('OTEL_EXPORTER_OTLP_ENDPOINT') || endpoint('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'))
}

/** The environment the server reads, with defaults; the Config type is derived from it. */
export const configSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port (0: any free port)' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address to listen on' }),
  DATABASE_URL: Type.String({
    minLength: 1,
    default: 'sqlite:./data/petstore.db',
    description: 'sqlite:PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB',
  }),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL connections per instance for writes and transactions' }),
  DATABASE_READ_CONNECTIONS: Type.Integer({
    minimum: 0,
    maximum: 100,
    default: 2,
    description: 'PostgreSQL connections per instance that carry the reads, many at once on each (0: reads use the pool)',
  }),
  API_KEYS: Type.String({
    pattern: listOf(keyEntry),
    default: '',
    description: 'comma-separated API keys accepted beside the stored ones, each KEY (the default roles) or KEY:role+role',
  }),
  LOG_LEVEL: Type.Unsafe<(typeof logLevels)[number]>({ type: 'string', enum: logLevels, default: 'info' }),
  LOG_BUFFER_BYTES: Type.Integer({
    minimum: 65_536,
    maximum: 1_073_741_824,
    default: 16_777_216,
    description: 'log lines waiting to be written to stdout are held up to this many bytes; more are dropped (and counted)',
  }),
  // long enough for any statement of ours under load, short enough that a client is told "try
  // again" (503) before it gives up on its own
  DATABASE_TIMEOUT_MS: milliseconds(5_000, 'how long a statement or a connection may take before the database counts as unavailable (503)'),
  HEADERS_TIMEOUT_MS: milliseconds(10_000, 'the request headers must arrive within this time (408)'),
  REQUEST_TIMEOUT_MS: milliseconds(30_000, 'the whole request, headers and body, must arrive within this time (408)'),
  BODY_IDLE_TIMEOUT_MS: milliseconds(10_000, 'the longest pause allowed while a request body arrives (408)'),
  KEEP_ALIVE_TIMEOUT_MS: milliseconds(72_000, 'an idle keep-alive connection is closed after this time'),
  MAX_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 512, description: 'connections open at once; more are refused, with a log line' }),
  SHUTDOWN_GRACE_MS: milliseconds(10_000, 'on SIGTERM or SIGINT, requests in flight get this long to finish'),
  // Off unless set: a fixed default port would collide when instances share a host.
  METRICS_PORT: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 65535, description: 'TCP port of the Prometheus metrics listener (0: any free port); unset: no listener' }),
  ),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address of the metrics listener' }),
  // About 16 requests a second, sustained for a minute, for each key: far above what one client
  // of a catalogue needs, low enough that a runaway client cannot take the database from others.
  RATE_LIMIT_PER_KEY: count(1_000, 'requests one API key may make per window, all instances sharing REDIS_URL together'),
  // Enough for a person to fix a mistyped key; a guesser gets 20 tries a minute, not 10,000 a second.
  RATE_LIMIT_PER_ADDRESS: count(20, 'requests without a valid key one client address may make per window; then 429 until it ends'),
  RATE_LIMIT_WINDOW_S: Type.Integer({ minimum: 1, maximum: 86_400, default: 60, description: 'the rate-limit window, in seconds' }),
  REDIS_URL: Type.String({
    pattern: '^(rediss?://.+)?$',
    default: '',
    description: 'redis://[USER:PASSWORD@]HOST:PORT[/DB]: rate-limit counters shared by every instance; none: each counts alone',
  }),
  REDIS_TIMEOUT_MS: Type.Integer({
    minimum: 10,
    maximum: 60_000,
    default: 200,
    description: 'longest wait for Redis; past it (or on any Redis error) the instance counts alone for a second',
  }),
  REDIS_KEY_PREFIX: Type.String({
    pattern: '^[A-Za-z0-9:._-]{1,100}$',
    default: 'petstore:ratelimit',
    description: 'prefix of the Redis keys of the rate-limit counters',
  }),
  CORS_ORIGINS: Type.String({
    pattern: listOf(`\\*|${origin}`),
    default: '',
    description: 'comma-separated origins whose browser pages may call the API (`*`: any); none by default',
  }),
  // Webhooks (openapi.yaml: Events). Both guards are on unless an operator turns them off, as
  // the tests do for receivers on 127.0.0.1.
  WEBHOOK_ALLOW_HTTP: Type.Boolean({ default: false, description: 'true: webhook URLs may be http://, not only https://' }),
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({
    default: false,
    description: 'true: webhook URLs may name or resolve to loopback, private, link-local and other non-public addresses',
  }),
  WEBHOOK_MAX_PER_KEY: Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'webhook subscriptions one API key may hold' }),
  WEBHOOK_RETRY_PERIOD_S: Type.Integer({
    minimum: 1,
    maximum: 604_800,
    default: 86_400,
    description: 'how long an event is tried before its delivery is marked failed, in seconds',
  }),
  WEBHOOK_RETRY_BASE_MS: Type.Integer({
    minimum: 10,
    maximum: 10_000,
    default: 5_000,
    description: 'the first retry comes after half to all of this; each next wait doubles it, up to an hour',
  }),
  WEBHOOK_TIMEOUT_MS: milliseconds(10_000, 'a webhook receiver must answer within this time, or the attempt failed'),
  WEBHOOK_POLL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 250, description: 'how often an instance looks for deliveries due' }),
  // Fairness: one subscription's attempts under way are bounded, so a slow receiver holds at
  // most its own share of an instance's attempts, and a failing one is backed off.
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 10_000, default: 256, description: 'webhook attempts one instance makes at once, at most' }),
  WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: Type.Integer({
    minimum: 1,
    maximum: 1_000,
    default: 16,
    description: 'webhook attempts one instance makes at once to one subscription, at most',
  }),
  WEBHOOK_CIRCUIT_FAILURES: Type.Integer({
    minimum: 1,
    maximum: 1_000,
    default: 5,
    description: "failed attempts in a row that open a subscription's circuit: no attempt until it is half open, then one to probe",
  }),
  WEBHOOK_CIRCUIT_OPEN_MS: milliseconds(30_000, 'how long an open circuit waits before its probe; each failed probe doubles it, up to an hour'),
  WEBHOOK_RETRY_AFTER_MAX_S: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    default: 3_600,
    description: 'the longest Retry-After (of a 429 or 503) a webhook delivery waits for, in seconds; a longer one is cut to this',
  }),
  WEBHOOK_DISABLE_AFTER_S: Type.Integer({
    minimum: 0,
    maximum: 2_592_000,
    default: 432_000,
    description: 'a subscription whose every attempt has failed for this long is disabled, in seconds (0: never)',
  }),
  WEBHOOK_BEHIND_S: Type.Integer({
    minimum: 1,
    maximum: 86_400,
    default: 60,
    description: '/readyz says "degraded" while a webhook delivery that is due has waited longer than this for its attempt, in seconds',
  }),
  WEBHOOK_SECRET_OVERLAP_S: Type.Integer({
    minimum: 0,
    maximum: 604_800,
    default: 86_400,
    description: 'after a secret rotation, how long the previous secret still signs deliveries, in seconds',
  }),
  TRUST_PROXY: Type.String({
    pattern: listOf('[0-9A-Fa-f.:/]+|loopback|linklocal|uniquelocal'),
    default: '',
    description: 'comma-separated addresses or CIDR ranges of the proxies in front whose X-Forwarded-For names the client',
  }),
})

function count(fallback: number, description: string) {
  return Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: fallback, description })
}

function milliseconds(fallback: number, description: string) {
  return Type.Integer({ minimum: 100, maximum: 3_600_000, default: fallback, description })
}

type Lists = 'API_KEYS' | 'CORS_ORIGINS' | 'TRUST_PROXY'

export type Config = Omit<Static<typeof configSchema>, Lists> & Record<Lists, string[]>

/** A bad setting: the process reports it in one line and exits. */
export class ConfigError extends OperatorError {}

/**
 * How the environment is read (env-schema's way): text is coerced to the schema's types,
 * defaults are filled in, variables the schema does not name are dropped, and every error is
 * reported at once.
 */
export const configAjvOptions: Options = {
  allErrors: true,
  removeAdditional: true,
  useDefaults: true,
  coerceTypes: true,
  allowUnionTypes: true,
  addUsedSchema: false,
}

/** The schema as validated: closed, so that removeAdditional drops the other variables. */
export const closedConfigSchema = () => ({ ...structuredClone(configSchema), additionalProperties: false })

/** What the compiled validator in generated/ was made from: a schema that differs is compiled anew. */
export const configSchemaDigest = () => createHash('sha256').update(JSON.stringify(closedConfigSchema())).digest('hex')

/** The validator of the environment: made by `npm run generate` (generated/config.cjs), so that
 * no schema is compiled at start; compiled here only when that one is missing or out of date. */
export function configValidator(dir: string = generatedDir): ValidateFunction {
  const generated = loadGenerated<ValidateFunction & { schemaDigest: string }>(join(dir, 'config.cjs'))
  if (generated?.schemaDigest === configSchemaDigest()) return generated
  return new Ajv(configAjvOptions).compile(closedConfigSchema())
}

let validator: ValidateFunction | undefined

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  validator ??= configValidator()
  const raw: object = { ...env }
  if (!validator(raw)) throw new ConfigError(`invalid configuration: ${describe(validator.errors as AjvError[])}`)
  const config = raw as Static<typeof configSchema>
  if (config.METRICS_PORT === config.PORT && config.PORT !== 0) {
    throw new ConfigError(`invalid configuration: METRICS_PORT must not be PORT (${config.PORT}): the metrics have a port of their own`)
  }
  return { ...config, API_KEYS: list(config.API_KEYS), CORS_ORIGINS: list(config.CORS_ORIGINS), TRUST_PROXY: list(config.TRUST_PROXY) }
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
}

/** What each variable with a pattern may be, in words. */
const patternRules: Record<string, string> = {
  API_KEYS: 'comma-separated tokens (letters, digits and -._~+/), each followed by :role+role or not',
  REDIS_URL: 'a redis:// or rediss:// URL',
  REDIS_KEY_PREFIX: '1 to 100 letters, digits and :._-',
  CORS_ORIGINS: 'comma-separated origins (scheme://host[:port], no path) or *',
  TRUST_PROXY: 'comma-separated IP addresses or CIDR ranges (or loopback, linklocal, uniquelocal)',
}

interface AjvError {
  instancePath: string
  message?: string
  params: { allowedValues?: readonly string[]; pattern?: string }
}

/** `PORT must be <= 65535`, naming the variable and, for a list, what it may be. */
function describe(errors: AjvError[]): string {
  return errors
    .map(({ instancePath, message, params }) => {
      const name = instancePath.slice(1)
      if (params.allowedValues) return `${name} must be one of ${params.allowedValues.join(', ')}`
      if (params.pattern) return `${name} must be ${patternRules[name]}`
      return `${name} ${message}`
    })
    .join('; ')
}
