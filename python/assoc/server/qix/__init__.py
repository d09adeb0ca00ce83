"""QIX: the engine's JSON-RPC API over WebSocket, as enigma.js and other Qlik clients use it."""
