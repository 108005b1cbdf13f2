module github.com/agentbox-dev/agentbox

go 1.26
