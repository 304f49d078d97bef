import { type Static, Type } from '@sinclair/typebox'
import envSchema from 'env-schema'

/** A token68 (RFC 7235): what a client can send after `Bearer `. */
const token = '[A-Za-z0-9._~+/-]+=*'

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** The environment the server reads, with defaults; the Config type is derived from it. */
export const configSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port (0: any free port)' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address to listen on' }),
  DATABASE_URL: Type.String({
    minLength: 1,
    default: 'sqlite:./data/petstore.db',
    description: 'sqlite:PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB',
  }),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL connections per instance' }),
  API_KEYS: Type.String({
    pattern: `^\\s*(${token})?\\s*(,\\s*(${token})?\\s*)*$`,
    default: '',
    description: 'comma-separated API keys accepted beside the stored ones',
  }),
  LOG_LEVEL: Type.Unsafe<(typeof logLevels)[number]>({ type: 'string', enum: logLevels, default: 'info' }),
  // long enough for any statement of ours under load, short enough that a client is told "try
  // again" (503) before it gives up on its own
  DATABASE_TIMEOUT_MS: milliseconds(5_000, 'how long a statement or a connection may take before the database counts as unavailable (503)'),
  HEADERS_TIMEOUT_MS: milliseconds(10_000, 'the request headers must arrive within this time (408)'),
  REQUEST_TIMEOUT_MS: milliseconds(30_000, 'the whole request, headers and body, must arrive within this time (408)'),
  BODY_IDLE_TIMEOUT_MS: milliseconds(10_000, 'the longest pause allowed while a request body arrives (408)'),
  KEEP_ALIVE_TIMEOUT_MS: milliseconds(72_000, 'an idle keep-alive connection is closed after this time'),
  MAX_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 512, description: 'connections open at once; more are refused, with a log line' }),
  SHUTDOWN_GRACE_MS: milliseconds(10_000, 'on SIGTERM or SIGINT, requests in flight get this long to finish'),
})

function milliseconds(fallback: number, description: string) {
  return Type.Integer({ minimum: 100, maximum: 3_600_000, default: fallback, description })
}

export type Config = Omit<Static<typeof configSchema>, 'API_KEYS'> & { API_KEYS: string[] }

/** A bad setting: the process reports it in one line and exits. */
export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let raw: Static<typeof configSchema>
  try {
    raw = envSchema<Static<typeof configSchema>>({ schema: structuredClone(configSchema), data: { ...env }, env: false })
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${describe(error as Error & { errors: AjvError[] })}`)
  }
  const API_KEYS = raw.API_KEYS.split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '')
  return { ...raw, API_KEYS }
}

interface AjvError {
  instancePath: string
  message?: string
  params: { allowedValues?: readonly string[]; pattern?: string }
}

/** `PORT must be <= 65535`, naming the variable and, for a list, what it may be. */
function describe({ errors }: { errors: AjvError[] }): string {
  return errors
    .map(({ instancePath, message, params }) => {
      const name = instancePath.slice(1)
      if (params.allowedValues) return `${name} must be one of ${params.allowedValues.join(', ')}`
      if (params.pattern) return `${name} must be comma-separated tokens (letters, digits and -._~+/)`
      return `${name} ${message}`
    })
    .join('; ')
}
