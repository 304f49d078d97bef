// (Spectral loads one function a file: see lifecycle-rules.js)
export { retirementDocumented as default } from './lifecycle-rules.js'
