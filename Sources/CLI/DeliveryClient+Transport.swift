import WebhookClient
import WebhookDelivery

// The TLS client already has the worker's `post` shape: it only needs to say so.
extension DeliveryClient: DeliveryTransport {}

/// The sender of `buzzkit serve`: http and https with the system trust store. Each connection's
/// address is checked too, so a name that resolves elsewhere since the endpoint was created
/// (DNS rebinding) still cannot reach a private network.
func webhookTransport(_ policy: DestinationPolicy) throws -> DeliveryClient {
    var configuration = DeliveryClient.Configuration()
    let allowPrivate = policy.allowPrivateNetworks
    configuration.allowsAddress = { address in allowPrivate || !address.isPrivateOrLocal }
    return try DeliveryClient(configuration: configuration)
}
