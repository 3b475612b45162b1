package main

import "errors"

// checkGodistlock refuses settings that make no sense with the godistlock
// listener (--godistlock-port).
//   - The same port as --port: two listeners cannot share it.
//   - An auth token: godistlock has no authentication step, so its port
//     would hand out the very locks the token protects.
func checkGodistlock(cfg *Config) error {
	if cfg.GodistlockPort == 0 {
		return nil
	}
	if cfg.GodistlockPort == cfg.Port {
		return errors.New("--godistlock-port (DFLOCKD_GODISTLOCK_PORT) must differ from --port (DFLOCKD_PORT)")
	}
	if cfg.AuthToken != "" {
		return errors.New("--godistlock-port (DFLOCKD_GODISTLOCK_PORT) cannot be combined with an auth token: " +
			"the godistlock protocol has no authentication; unset one of them")
	}
	if cfg.PolicyFile != "" && cfg.TLSClientCA == "" {
		return errors.New("--godistlock-port (DFLOCKD_GODISTLOCK_PORT) with --policy-file needs --tls-client-ca: " +
			"the godistlock protocol has no authentication, so its clients are known by their certificates only")
	}
	return nil
}
