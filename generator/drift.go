package generator

// Drift is what generate --check reports for the project in dir: the
// unified diff of files against the disk (Diff), and, when dir is in a git
// repository, how its .gitattributes differs from what agentbox keeps
// there (CheckRepo, paths from the repository's top). Both are "" when
// nothing drifted.
func Drift(dir string, files map[string][]byte) (diff, repo string, err error) {
	if diff, err = Diff(dir, files); err != nil {
		return "", "", err
	}
	if root, rel, err := RepoRoot(dir); err == nil {
		if repo, err = CheckRepo(root, rel); err != nil {
			return "", "", err
		}
	}
	return diff, repo, nil
}
