/** The interface version (spec: 0.1.0), also the package version. */
export const VERSION = '0.1.0';
