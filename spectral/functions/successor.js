// (Spectral loads one function a file: see lifecycle-rules.js)
export { successor as default } from './lifecycle-rules.js'
