import t from 'tap'
import { ConfigError, loadConfig } from '../src/core/config.js'
import { api, build, call } from './helpers/app.js'

t.test('defaults: port 3000 on 127.0.0.1, SQLite in ./data, no keys, level info', async (t) => {
  t.strictSame(loadConfig({}), {
    PORT: 3000,
    HOST: '127.0.0.1',
    DATABASE_URL: 'sqlite:./data/petstore.db',
    DATABASE_POOL_SIZE: 10,
    DATABASE_READ_CONNECTIONS: 2,
    API_KEYS: [],
    LOG_LEVEL: 'info',
    LOG_BUFFER_BYTES: 16777216,
    DATABASE_TIMEOUT_MS: 5000,
    HEADERS_TIMEOUT_MS: 10000,
    REQUEST_TIMEOUT_MS: 30000,
    BODY_IDLE_TIMEOUT_MS: 10000,
    KEEP_ALIVE_TIMEOUT_MS: 72000,
    MAX_CONNECTIONS: 512,
    SHUTDOWN_GRACE_MS: 10000,
    METRICS_HOST: '127.0.0.1',
    RATE_LIMIT_PER_KEY: 1000,
    RATE_LIMIT_PER_ADDRESS: 20,
    RATE_LIMIT_WINDOW_S: 60,
    REDIS_URL: '',
    REDIS_TIMEOUT_MS: 200,
    REDIS_KEY_PREFIX: 'petstore:ratelimit',
    WEBHOOK_ALLOW_HTTP: false,
    WEBHOOK_ALLOW_PRIVATE: false,
    WEBHOOK_MAX_PER_KEY: 10,
    WEBHOOK_RETRY_PERIOD_S: 86400,
    WEBHOOK_RETRY_BASE_MS: 5000,
    WEBHOOK_TIMEOUT_MS: 10000,
    WEBHOOK_POLL_MS: 250,
    WEBHOOK_CONCURRENCY: 256,
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: 16,
    WEBHOOK_CIRCUIT_FAILURES: 5,
    WEBHOOK_CIRCUIT_OPEN_MS: 30000,
    WEBHOOK_RETRY_AFTER_MAX_S: 3600,
    WEBHOOK_DISABLE_AFTER_S: 432000,
    WEBHOOK_BEHIND_S: 60,
    WEBHOOK_SECRET_OVERLAP_S: 86400,
    CORS_ORIGINS: [],
    TRUST_PROXY: [],
  })
})

t.test('values are read from their text; API_KEYS is a comma-separated list', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATABASE_URL: 'postgres://db/pets',
    DATABASE_POOL_SIZE: '4',
    DATABASE_READ_CONNECTIONS: '0',
    API_KEYS: ' key-one , key.two~+/== ,,key-three:pets:read+orders:admin',
    LOG_LEVEL: 'warn',
    LOG_BUFFER_BYTES: '65536',
    REQUEST_TIMEOUT_MS: '20000',
    METRICS_PORT: '9464',
    METRICS_HOST: '0.0.0.0',
    REDIS_URL: 'redis://127.0.0.1:6379/2',
    CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,',
    TRUST_PROXY: '10.0.0.0/8, ::1',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_RETRY_PERIOD_S: '3600',
    UNRELATED: 'ignored',
  })
  t.strictSame(config, {
    PORT: 8080,
    HOST: '0.0.0.0',
    DATABASE_URL: 'postgres://db/pets',
    DATABASE_POOL_SIZE: 4,
    DATABASE_READ_CONNECTIONS: 0,
    API_KEYS: ['key-one', 'key.two~+/==', 'key-three:pets:read+orders:admin'],
    LOG_LEVEL: 'warn',
    LOG_BUFFER_BYTES: 65536,
    DATABASE_TIMEOUT_MS: 5000,
    HEADERS_TIMEOUT_MS: 10000,
    REQUEST_TIMEOUT_MS: 20000,
    BODY_IDLE_TIMEOUT_MS: 10000,
    KEEP_ALIVE_TIMEOUT_MS: 72000,
    MAX_CONNECTIONS: 512,
    SHUTDOWN_GRACE_MS: 10000,
    METRICS_PORT: 9464,
    METRICS_HOST: '0.0.0.0',
    RATE_LIMIT_PER_KEY: 1000,
    RATE_LIMIT_PER_ADDRESS: 20,
    RATE_LIMIT_WINDOW_S: 60,
    REDIS_URL: 'redis://127.0.0.1:6379/2',
    REDIS_TIMEOUT_MS: 200,
    REDIS_KEY_PREFIX: 'petstore:ratelimit',
    WEBHOOK_ALLOW_HTTP: true,
    WEBHOOK_ALLOW_PRIVATE: false,
    WEBHOOK_MAX_PER_KEY: 10,
    WEBHOOK_RETRY_PERIOD_S: 3600,
    WEBHOOK_RETRY_BASE_MS: 5000,
    WEBHOOK_TIMEOUT_MS: 10000,
    WEBHOOK_POLL_MS: 250,
    WEBHOOK_CONCURRENCY: 256,
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: 16,
    WEBHOOK_CIRCUIT_FAILURES: 5,
    WEBHOOK_CIRCUIT_OPEN_MS: 30000,
    WEBHOOK_RETRY_AFTER_MAX_S: 3600,
    WEBHOOK_DISABLE_AFTER_S: 432000,
    WEBHOOK_BEHIND_S: 60,
    WEBHOOK_SECRET_OVERLAP_S: 86400,
    CORS_ORIGINS: ['https://app.example.com', 'http://localhost:5173'],
    TRUST_PROXY: ['10.0.0.0/8', '::1'],
  })
})

t.test('a bad value is a ConfigError naming the variable and what it may be', async (t) => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: '70000' }, 'invalid configuration: PORT must be <= 65535'],
    [{ PORT: 'http' }, 'invalid configuration: PORT must be integer'],
    [{ DATABASE_POOL_SIZE: '0' }, 'invalid configuration: DATABASE_POOL_SIZE must be >= 1'],
    [{ LOG_LEVEL: 'verbose' }, 'invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'invalid configuration: WEBHOOK_ALLOW_PRIVATE must be boolean'],
    [
      { API_KEYS: 'good,has space' },
      'invalid configuration: API_KEYS must be comma-separated tokens (letters, digits and -._~+/), each followed by :role+role or not',
    ],
    [
      { API_KEYS: 'good:pets' },
      'invalid configuration: API_KEYS must be comma-separated tokens (letters, digits and -._~+/), each followed by :role+role or not',
    ],
    [{ BODY_IDLE_TIMEOUT_MS: '5' }, 'invalid configuration: BODY_IDLE_TIMEOUT_MS must be >= 100'],
    [{ METRICS_PORT: '' }, 'invalid configuration: METRICS_PORT must be integer'],
    [{ METRICS_PORT: '65536' }, 'invalid configuration: METRICS_PORT must be <= 65535'],
    [{ HOST: '', PORT: '-1' }, 'invalid configuration: PORT must be >= 0; HOST must NOT have fewer than 1 characters'],
    [{ RATE_LIMIT_PER_KEY: '0' }, 'invalid configuration: RATE_LIMIT_PER_KEY must be >= 1'],
    [{ RATE_LIMIT_WINDOW_S: '86401' }, 'invalid configuration: RATE_LIMIT_WINDOW_S must be <= 86400'],
    [{ REDIS_URL: 'localhost:6379' }, 'invalid configuration: REDIS_URL must be a redis:// or rediss:// URL'],
    [{ REDIS_KEY_PREFIX: 'has space' }, 'invalid configuration: REDIS_KEY_PREFIX must be 1 to 100 letters, digits and :._-'],
    [
      { CORS_ORIGINS: 'https://app.example.com/path' },
      'invalid configuration: CORS_ORIGINS must be comma-separated origins (scheme://host[:port], no path) or *',
    ],
    [{ CORS_ORIGINS: 'app.example.com' }, 'invalid configuration: CORS_ORIGINS must be comma-separated origins (scheme://host[:port], no path) or *'],
    [
      { TRUST_PROXY: 'proxy.example.com' },
      'invalid configuration: TRUST_PROXY must be comma-separated IP addresses or CIDR ranges (or loopback, linklocal, uniquelocal)',
    ],
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), new ConfigError(message), JSON.stringify(env))
  }
})

t.test('blanks around the commas of a list are not part of its items: API_KEYS="key-one, key-two" is two keys', async (t) => {
  const { API_KEYS } = loadConfig({ API_KEYS: 'key-one, key-two' })
  t.strictSame(API_KEYS, ['key-one', 'key-two'])
  const app = await build(t, { API_KEYS })
  for (const key of API_KEYS) t.equal((await call(t, app, { url: `${api}/pets`, key })).status, 200, `${key} is taken`)
  t.throws(() => loadConfig({ API_KEYS: 'key one' }), { message: /^invalid configuration: API_KEYS must be comma-separated tokens/ }, 'a blank inside a key')
})
