import { connect } from 'node:net'
import { buildApp } from '/work/main/src/app.ts'
import { loadConfig } from '/work/main/src/config.ts'
import * as conn from '/work/main/src/http/connections.ts'
const app = await buildApp({ ...loadConfig({}), DATABASE_URL: 'sqlite::memory:', API_KEYS: ['k'], LOG_LEVEL: 'silent', HEADERS_TIMEOUT_MS: 1000, REQUEST_TIMEOUT_MS: 2000, BODY_IDLE_TIMEOUT_MS: 5000 })
const orig = app.server.listeners('clientError')
app.server.prependListener('clientError', (e: any, s: any) => console.log('clientError', e.code, 'httpMessage', s._httpMessage === undefined ? 'undef' : s._httpMessage === null ? 'null' : 'sent=' + s._httpMessage.headersSent, 'ended', s.writableEnded, s.destroyed))
await app.listen({ port: 0, host: '127.0.0.1' })
const port = (app.server.address() as any).port
const go = (name: string, f: (s: any) => void) => new Promise<void>((r) => { const s = connect(port, '127.0.0.1'); let a=''; s.on('data', (d) => a += d); s.on('error', () => {}); s.on('close', () => { console.log(name, JSON.stringify(a.slice(0, 40))); r() }); s.on('connect', () => f(s)) })
await Promise.all([
 go('silent', () => {}),
 go('partial', (s) => s.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n')),
 go('trickle-noauth', (s) => { s.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n'); const i = setInterval(() => s.writable ? s.write(' ') : clearInterval(i), 200); setTimeout(() => clearInterval(i), 6000) }),
])
await app.close()
