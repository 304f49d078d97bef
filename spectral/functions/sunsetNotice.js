// (Spectral loads one function a file: see lifecycle-rules.js)
export { sunsetNotice as default } from './lifecycle-rules.js'
