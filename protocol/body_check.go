package protocol

// CheckClientRequestBody is CHECK_CLIENT_CONFIG's body (RocketMQ's
// CheckClientRequestBody): a consumer's subscription the broker is asked
// to accept before the consumer starts.
type CheckClientRequestBody struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
}
