package settings

// LoadUser reads this user's settings (the file at Path, then the
// environment's overrides) and their ca_certificates, which every client
// of bump and every build trusts: a certificate file that cannot be read
// is an error here. A command loads its settings once and passes them to
// what needs them; CAPEM of the result gives the certificates read here.
func LoadUser(getenv func(string) string) (Settings, error) {
	s, err := Load(Path(), getenv)
	if err != nil {
		return s, err
	}
	pemData, err := s.CAPEM()
	if err != nil {
		return s, err
	}
	s.caRead, s.caPEM = true, pemData
	return s, nil
}
